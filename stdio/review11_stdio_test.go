package stdio_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/stdio"
)

// TestIsolateRefusesStderrOnTheChannel: a server launched with its
// standard error on the same pipe as its standard output (2>&1, or a
// client passing one pipe for both) cannot be isolated: pointing
// descriptor 1 at standard error points it back at the JSON-RPC channel,
// so every stray print still corrupts it. Isolate must refuse with a clear
// error instead of promising a clean channel it does not give; the check on
// descriptor numbers alone (1 != 2) let it through.
func TestIsolateRefusesStderrOnTheChannel(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stdin = strings.NewReader("") // end of input: a server that starts exits at once
	cmd.Stdout, cmd.Stderr = w, w     // one pipe for both, as 2>&1 does
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	out := make(chan []byte, 1)
	go func() {
		var b []byte
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			b = append(b, buf[:n]...)
			if err != nil {
				out <- b
				return
			}
		}
	}()
	werr := cmd.Wait()
	got := string(<-out)
	r.Close()
	if werr == nil {
		t.Fatalf("the server started with stdout and stderr on one pipe (exit 0); its output:\n%s", got)
	}
	if !strings.Contains(got, "stdio:") || !strings.Contains(got, "standard error") {
		t.Errorf("Isolate's error does not say what is wrong; output:\n%s", got)
	}
}

// TestIsolateSameFileOptions: the same check for files passed in Options:
// two descriptors of one pipe are one channel.
func TestIsolateSameFileOptions(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	in, _, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	// A second descriptor of the write end: another *os.File, another fd.
	w2, err := os.OpenFile("/dev/fd/"+strconv.Itoa(int(w.Fd())), os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/fd on this system: %v", err)
	}
	defer w2.Close()
	if w2.Fd() == w.Fd() {
		t.Fatal("expected two descriptors")
	}
	if _, err := stdio.Isolate(&stdio.Options{Stdin: in, Stdout: w, Stderr: w2}); err == nil {
		t.Error("Isolate with Stdout and Stderr on one pipe: got nil error, want one")
	}
}
