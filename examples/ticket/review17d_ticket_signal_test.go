//go:build unix

package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReview17dDemoSecondSignalEndsIt: `ticket demo` stops at its next
// call after SIGINT or SIGTERM, but one blocked in a write to an output
// that is no longer read (`ticket demo | less` left paused, a supervisor's
// pipe) never reaches that call, and main's signal context, registered
// until run returns, swallowed every further signal: only SIGKILL ended
// it. As in examples/demo, a second signal now ends it at once.
func TestReview17dDemoSecondSignalEndsIt(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cfg := configFile(t, "calls_per_min: 5 ", "calls_per_min: 1000000 ", "cost_per_session: 10 ", "cost_per_session: 100000000 ")
			cmd := exec.Command(ticketBinary(t), "--config", cfg, "demo")
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + t.TempDir()}
			stderr := &syncBuffer{}
			cmd.Stderr = stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { // skipped: not waited for
				if cmd.ProcessState == nil {
					cmd.Process.Kill()
					cmd.Wait()
				}
			})
			// Read up to the burst, then no more: the demo soon blocks
			// writing to the full pipe.
			sc := bufio.NewScanner(stdout)
			for sc.Scan() && !strings.HasPrefix(sc.Text(), "  call 100/") {
			}
			if !review17dBlockedOnPipe(t, cmd.Process.Pid) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the demo did not block writing to its unread output in 30 s; stderr:\n%s", stderr)
			}
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond)
			cmd.Process.Signal(sig)
			select {
			case err = <-waited:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-waited
				t.Fatalf("the demo, blocked on its output, still ran 10 s after a second %v; stderr:\n%s", sig, stderr)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("exit: %v, want the end by %v; stderr:\n%s", err, sig, stderr)
			}
			if ws := ee.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != sig {
				t.Errorf("exit: %v, want the end by %v (the runtime's default for a second one); stderr:\n%s", err, sig, stderr)
			}
		})
	}
}

// review17dBlockedOnPipe waits, up to 30 s, until a thread of process pid
// sleeps in the kernel's pipe write (Linux's /proc/PID/task/*/wchan), and
// reports whether it did; the test is skipped where /proc does not say.
func review17dBlockedOnPipe(t *testing.T, pid int) bool {
	t.Helper()
	tasks := filepath.Join("/proc", strconv.Itoa(pid), "task")
	if _, err := os.Stat(tasks); err != nil {
		t.Skipf("no %s to tell a blocked write: %v", tasks, err)
	}
	shown := false // a kernel that hides wchan shows "0"
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		wchans, _ := filepath.Glob(filepath.Join(tasks, "*", "wchan"))
		for _, w := range wchans {
			b, _ := os.ReadFile(w)
			if s := strings.TrimSpace(string(b)); s != "" && s != "0" {
				shown = true
			}
			if strings.Contains(string(b), "pipe_write") {
				return true
			}
		}
	}
	if !shown {
		t.Skipf("%s/*/wchan does not say where a thread sleeps", tasks)
	}
	return false
}
