//go:build unix

package main

import (
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReview57LargestTimeoutShutdownWaits: --timeout takes up to
// math.MaxInt64 nanoseconds (9223372036 s). At shutdown the gateway waits,
// once it has closed the connections left after the grace, at most
// --timeout and 5 s for their handlers to record their outcome; that sum
// overflowed for a --timeout within 5 s of the largest, the deadline fell
// in the past, and the gateway gave up at once: exit status 1 ("requests
// still running ... audit events may be lost"), the audit sink closed
// under a call the downstream answered a moment later. The wait must
// reach the call's end: run returns nil and the outcome is recorded.
func TestReview57LargestTimeoutShutdownWaits(t *testing.T) {
	oldArgs, oldFlags, oldGrace := os.Args, flag.CommandLine, shutdownGrace
	t.Cleanup(func() { os.Args, flag.CommandLine, shutdownGrace = oldArgs, oldFlags, oldGrace })
	shutdownGrace = 100 * time.Millisecond
	entered := make(chan struct{}, 1)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		entered <- struct{}{}
		select { // past the grace
		case <-time.After(time.Second):
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`)
	}))
	t.Cleanup(down.Close)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	os.Unsetenv("MCP_GATEWAY_TOKENS")
	flag.CommandLine = flag.NewFlagSet("gateway", flag.ContinueOnError)
	flag.CommandLine.SetOutput(io.Discard)
	os.Args = []string{"gateway", "--port", "0", "--upstream", down.URL + "/mcp", "--audit", auditPath, "--timeout", "9223372036"}
	logs := &runLogs{}
	done := make(chan error, 1)
	go func() { done <- run(slog.New(slog.NewTextHandler(logs, nil))) }()
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("run returned at start: %v\n%s", err, logs)
		default:
		}
		if m := runAddr.FindStringSubmatch(logs.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("gateway did not start; logs:\n%s", logs)
		}
	}
	call := postCall(base, "admin-token", readCall)
	<-entered
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	var err error
	select {
	case err = <-done:
	case <-time.After(15 * time.Second):
		t.Fatalf("run did not return after SIGTERM; logs:\n%s", logs)
	}
	<-call
	if err != nil {
		t.Errorf("run: %v (exit status %d), want nil: the downstream answered 1 s after the signal; logs:\n%s", err, exitCode(err), logs)
	}
	b, _ := os.ReadFile(auditPath)
	if !strings.Contains(string(b), `"outcome"`) {
		t.Errorf("no outcome event in the audit file when run returned:\n%s\nlogs:\n%s", b, logs)
	}
}

// TestReview57TimeoutTooLargeSaysTheLimit: a --timeout over the largest
// the gateway takes (1e10, +Inf) was refused with "want a positive number
// of seconds", which it is: the operator was not told what is wrong. The
// message names the largest value.
func TestReview57TimeoutTooLargeSaysTheLimit(t *testing.T) {
	for _, v := range []string{"1e10", "+Inf", "9223372037"} {
		_, err := runAtStart(t, nil, "--port", "0", "--upstream", "http://127.0.0.1:1/mcp", "--timeout", v)
		if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), "at most 9223372036") {
			t.Errorf("--timeout %s: %v (exit status %d), want a usage error saying at most 9223372036 seconds", v, err, exitCode(err))
		}
	}
	// The largest starts.
	if _, err := runAtStart(t, nil, "--port", "0", "--upstream", "http://127.0.0.1:1/mcp", "--timeout", "9223372036", "--path", "nopath"); err == nil || !strings.Contains(err.Error(), "--path") {
		t.Errorf("--timeout 9223372036: %v, want it taken (the error of the --path checked after it)", err)
	}
}
