//go:build unix

package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReview17DemoStopsOnSignal: main's signal context reached the serve
// commands only, and while it was registered SIGINT and SIGTERM no longer
// ended the process, so `ticket demo` ignored Ctrl-C (every one of them)
// and ran to its end: with a large calls_per_min, its burst of
// calls_per_min+1 calls for minutes, and only SIGKILL stopped it, leaving
// its temporary audit directory behind. The demo now stops at the signal,
// removes that directory and exits 1.
func TestReview17DemoStopsOnSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			cfg := configFile(t, "calls_per_min: 5 ", "calls_per_min: 1000000 ", "cost_per_session: 10 ", "cost_per_session: 100000000 ")
			cmd := exec.Command(ticketBinary(t), "--config", cfg, "demo")
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + tmp}
			stderr := &syncBuffer{}
			cmd.Stderr = stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					if strings.HasPrefix(sc.Text(), "  call 100/") {
						cmd.Process.Signal(sig)
					}
				}
				waited <- cmd.Wait()
			}()
			select {
			case err = <-waited:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-waited
				t.Fatalf("the demo still ran 20 s after its start, signalled (%v) at its 100th burst call; stderr:\n%s", sig, stderr)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Errorf("exit: %v, want status 1; stderr:\n%s", err, stderr)
			}
			if !strings.Contains(stderr.String(), "interrupted") {
				t.Errorf("stderr does not say the demo was interrupted:\n%s", stderr)
			}
			left, err := os.ReadDir(tmp)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range left {
				t.Errorf("%v left %s in the temporary directory", sig, e.Name())
			}
		})
	}
}

// TestReview17DemoClosedOutputRemovesTempDir: `ticket demo | head -1`
// ended the demo with SIGPIPE at its first write after head exited (the
// Go runtime's default for stdout), skipping its deferred cleanup: every
// such run left a ticket-demo-* directory with its audit trail in the
// temporary directory. The demo now stops when its output is closed,
// removes the directory and exits silently with 141 (128 + SIGPIPE), the
// status a shell reports for the runtime's default. Its stdout is a pipe
// already closed at its reading end.
func TestReview17DemoClosedOutputRemovesTempDir(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command(ticketBinary(t), "demo")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + tmp}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out.Close() // as head does once it has its line
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("the demo did not exit with a status (%v); stderr:\n%s", err, stderr)
	}
	if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() || ee.ExitCode() != 128+int(syscall.SIGPIPE) {
		t.Errorf("closed output: %v, want exit status 141 (128+SIGPIPE), not death by the signal; stderr:\n%s", err, stderr)
	}
	if stderr.String() != "" {
		t.Errorf("stderr %q, want nothing (as the signal would have said)", stderr)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("the demo left %s in the temporary directory", e.Name())
	}
}
