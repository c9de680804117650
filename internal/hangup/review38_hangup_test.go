//go:build linux

package hangup_test

import (
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/hangup"
)

// TestReview38ReopenNowLogs pins the lines an operator reads after a
// rotation: a sink reopened is logged at INFO with its name, and a SIGHUP
// with no file to reopen is logged as ignored, so that a rotator's signal
// never passes unseen.
func TestReview38ReopenNowLogs(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    hangup.Reopener
		want []string
	}{
		{"reopened", &counter{}, []string{"level=INFO", "audit file reopened", "audit=/var/log/a.jsonl"}},
		{"no_file", nil, []string{"level=INFO", "no audit file to reopen; ignored"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncBuf
			hangup.ReopenNow(slog.New(slog.NewTextHandler(&logs, nil)), "/var/log/a.jsonl", tc.s)
			for _, w := range tc.want {
				if !strings.Contains(logs.String(), w) {
					t.Errorf("ReopenNow logged %q; want it to hold %q", logs.String(), w)
				}
			}
		})
	}
}

// TestReview38StopWaitsForTheRunningCall pins Handle's stop: it returns
// only once no call of f runs any more. The binaries close their audit
// sink right after stop; a reopen still running then would write to, or
// swap, a closed sink's file.
func TestReview38StopWaitsForTheRunningCall(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var once bool
	stop := hangup.Handle(func() {
		if !once {
			once = true
			close(started)
			<-release
		}
	})
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("f was not called on SIGHUP")
	}
	stopped := make(chan struct{})
	go func() {
		stop()
		close(stopped)
	}()
	// A bounded wait for what must not happen: stop returning while f runs.
	select {
	case <-stopped:
		t.Errorf("stop returned while f was still running")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	<-stopped
}

// TestReview38OpenRegularClosesWhatItRefuses pins that OpenRegular closes
// the file it opened and then refused (a directory, a device): a binary
// that reloads its policy on every SIGHUP would otherwise leak a
// descriptor per signal while its --policy names such a file.
func TestReview38OpenRegularClosesWhatItRefuses(t *testing.T) {
	count := func() int {
		t.Helper()
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	dir := t.TempDir()
	before := count()
	for _, path := range []string{dir, "/dev/null", dir, "/dev/null"} {
		if f, err := hangup.OpenRegular(path); err == nil {
			f.Close()
			t.Fatalf("OpenRegular(%s) opened it; want refused as not a regular file", path)
		}
	}
	if after := count(); after != before {
		t.Errorf("open descriptors: %d before four refused opens, %d after; want none left open", before, after)
	}
}
