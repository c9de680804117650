//go:build unix

package hangup_test

import (
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/hangup"
)

// TestSIGHUPAfterStopDoesNotEndProcess: the binaries call stop and then
// close their sink, which writes and fsyncs its buffered records. A log
// rotator's SIGHUP in between (stop restored the runtime's default, which
// ends the process) lost those records. After stop, SIGHUP is ignored.
// The process under test is a child: the test binary run again.
func TestSIGHUPAfterStopDoesNotEndProcess(t *testing.T) {
	if os.Getenv("HANGUP_CHILD") == "1" {
		stop := hangup.Reopen(slog.New(slog.DiscardHandler), "a.jsonl", &counter{})
		stop()
		syscall.Kill(os.Getpid(), syscall.SIGHUP)
		time.Sleep(200 * time.Millisecond) // the sink's Close would run here
		os.Stdout.WriteString("closed\n")
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSIGHUPAfterStopDoesNotEndProcess$")
	cmd.Env = append(os.Environ(), "HANGUP_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "closed") {
		t.Errorf("a SIGHUP between stop and the sink's Close: %v, output %q; want the process to go on and close its sink", err, out)
	}
}
