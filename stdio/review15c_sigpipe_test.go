//go:build unix

package stdio_test

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/stdio"
)

// sigpipeChildEnv makes the test binary run TestSIGPIPEChild as a child
// process.
const sigpipeChildEnv = "MCPGUARD_STDIO_SIGPIPE_CHILD"

// TestSIGPIPEChild is the child of TestIsolateOtherFilesLeaveSIGPIPE: it
// isolates a channel on pipes of its own (descriptors above 2), says so on
// standard error, waits for a byte on standard input, then writes to its
// own standard output, whose reader is gone. Run alone it does nothing.
func TestSIGPIPEChild(t *testing.T) {
	if os.Getenv(sigpipeChildEnv) != "1" {
		return // run as a child process by TestIsolateOtherFilesLeaveSIGPIPE
	}
	inR, _, err := os.Pipe()
	if err != nil {
		os.Exit(3)
	}
	_, outW, err := os.Pipe()
	if err != nil {
		os.Exit(3)
	}
	logf, err := os.CreateTemp("", "sigpipe-child-*.log")
	if err != nil {
		os.Exit(3)
	}
	os.Remove(logf.Name())
	if _, err := stdio.Isolate(&stdio.Options{Stdin: inR, Stdout: outW, Stderr: logf}); err != nil {
		os.Exit(4)
	}
	os.Stderr.WriteString("isolated\n")
	os.Stdin.Read(make([]byte, 1))
	for i := 0; i < 20; i++ {
		os.Stdout.WriteString("output nobody reads\n")
		time.Sleep(10 * time.Millisecond)
	}
	os.Exit(0) // only if the writes did not end it
}

// TestIsolateOtherFilesLeaveSIGPIPE: Isolate asks for SIGPIPE so that a
// server whose standard output or error goes to a client that went away
// is not killed at its next log line. Isolate on other files (a channel
// on descriptors above 2, as in tests or a server embedded in a larger
// program) redirects neither descriptor 1 nor 2, yet it asked for SIGPIPE
// all the same, process-wide: a program writing to its own standard
// output after its reader went away (`prog | head`) no longer ended
// there, as Go programs do, but wrote on into EPIPE errors. It now asks
// only when the files it works on include descriptor 1 or 2.
func TestIsolateOtherFilesLeaveSIGPIPE(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestSIGPIPEChild$")
	cmd.Env = append(os.Environ(), sigpipeChildEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(stderr)
	line, rerr := br.ReadString('\n')
	done := make(chan error, 1)
	go func() {
		io.Copy(io.Discard, br) // read to its end before Wait closes it
		done <- cmd.Wait()
	}()
	if rerr != nil || !strings.Contains(line, "isolated") {
		cmd.Process.Kill()
		t.Fatalf("child did not isolate: %q, %v (%v)", line, rerr, <-done)
	}
	stdout.Close() // the reader of its standard output goes away
	stdin.Write([]byte{1})
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the child did not end")
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("child ended with %v, want killed by SIGPIPE at its write to a broken standard output", err)
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGPIPE {
		t.Fatalf("child ended with %v, want killed by SIGPIPE at its write to a broken standard output (Isolate on other files caught it)", err)
	}
}
