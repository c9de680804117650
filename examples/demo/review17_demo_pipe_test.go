//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestReview17DemoClosedOutputRemovesTempDir: `go run ./examples/demo |
// head -1` ended the demo with SIGPIPE at its first write after head
// exited (the Go runtime's default for stdout), skipping its deferred
// cleanup: every such run left an mcpguard-demo-* directory with its audit
// database in the temporary directory, as an interrupted run did before
// review15b. The demo now stops when its output is closed, removes the
// directory and exits silently with 141 (128 + SIGPIPE), the status a
// shell reports for the runtime's default. The demo runs in a child
// process whose stdout is a pipe already closed at its reading end.
func TestReview17DemoClosedOutputRemovesTempDir(t *testing.T) {
	if os.Getenv("DEMO_REVIEW17_PIPE") != "" {
		os.Exit(demo(nil, os.Stdout, os.Stderr))
	}
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestReview17DemoClosedOutputRemovesTempDir$")
	cmd.Env = append(os.Environ(), "DEMO_REVIEW17_PIPE=1", "TMPDIR="+tmp)
	stderr := &lockedBuffer{}
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
