//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// signalWriter sends the process sig at the first write, as Ctrl-C in the
// middle of the walkthrough would (the temporary database exists by then),
// and waits, for up to 5 seconds, until stderr shows it was handled.
type signalWriter struct {
	sig    syscall.Signal
	stderr *lockedBuffer
	once   sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.once.Do(func() {
		syscall.Kill(os.Getpid(), w.sig)
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if strings.Contains(w.stderr.String(), "interrupted") {
				return
			}
		}
	})
	return len(p), nil
}

// TestReview15bDemoInterruptRemovesTempDir: Ctrl-C (SIGINT) or SIGTERM
// ended the demo with the Go runtime's default, skipping its deferred
// cleanup, and left an mcpguard-demo-* directory with its audit database
// in the temporary directory at every interrupted run. The demo now
// removes it and exits with 128 plus the signal's number. The demo runs
// in a child process: before the fix the signal killed it.
func TestReview15bDemoInterruptRemovesTempDir(t *testing.T) {
	if s := os.Getenv("DEMO_REVIEW15B_SIGNAL"); s != "" {
		sig := syscall.SIGINT
		if s == "TERM" {
			sig = syscall.SIGTERM
		}
		stderr := &lockedBuffer{}
		code := demo(nil, &signalWriter{sig: sig, stderr: stderr}, stderr)
		os.Stderr.WriteString(stderr.String())
		os.Exit(code)
	}
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
	}{{"INT", syscall.SIGINT}, {"TERM", syscall.SIGTERM}} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestReview15bDemoInterruptRemovesTempDir$")
			cmd.Env = append(os.Environ(), "DEMO_REVIEW15B_SIGNAL="+tc.name, "TMPDIR="+tmp)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("the demo did not exit with a status (%v):\n%s", err, out)
			}
			if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() || ee.ExitCode() != 128+int(tc.sig) {
				t.Errorf("SIG%s: %v, want exit status %d (128+%d)\n%s", tc.name, err, 128+int(tc.sig), tc.sig, out)
			}
			if !strings.Contains(string(out), "interrupted") {
				t.Errorf("stderr does not say the demo was interrupted:\n%s", out)
			}
			left, err := os.ReadDir(tmp)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range left {
				t.Errorf("SIG%s left %s in the temporary directory", tc.name, e.Name())
			}
		})
	}
}
