package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview57ShutdownBoundedBehindAHungRESTCall: at SIGTERM serve-http
// waits up to shutdownWait for the calls still running and then goes on
// with its shutdown, a warning saying their records may be lost (README:
// "a call still running after those 15 s loses its outcome record"). A
// REST call whose downstream hung held the shutdown for ever instead:
// closing its REST session waited for the call, so the server never exited
// and its audit trail was never closed.
func TestReview57ShutdownBoundedBehindAHungRESTCall(t *testing.T) {
	defer func(g, w time.Duration) { shutdownGrace, shutdownWait = g, w }(shutdownGrace, shutdownWait)
	shutdownGrace, shutdownWait = 100*time.Millisecond, 200*time.Millisecond

	tickets := &TicketSystem{}
	logs := &syncBuffer{}
	a, err := newApp(appOptions{
		ConfigName: "server.yaml", Config: testConfig(t, func(c *config) { allowWrites(c); c.DryRun = false }),
		AuditDir: t.TempDir(), Tickets: tickets, Marks: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveHTTP(ctx, a, ln, slog.New(slog.NewTextHandler(logs, nil))) }()

	tickets.mu.Lock() // the downstream hangs, its call ignoring cancellation
	released := false
	release := func() {
		if !released {
			released = true
			tickets.mu.Unlock()
		}
	}
	t.Cleanup(release)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/tools/create_ticket/call",
			strings.NewReader(`{"arguments":{"title":"t","body":"b"}}`))
		req.Header.Set("Authorization", "Bearer token-alice")
		req.Header.Set("X-Session-Id", "hung")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		a.flush()
		if evs, _ := audit.QueryJSONL(a.jsonlPath(), audit.Filter{Tool: "create_ticket"}); len(evs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the write's intent record never appeared")
		}
	}

	cancel() // SIGTERM
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serveHTTP: %v", err)
		}
	case <-time.After(5 * time.Second):
		release()
		<-done
		t.Fatal("serveHTTP did not return behind a hung REST call (shutdownWait is 200ms)")
	}
	if !strings.Contains(logs.String(), "still running") {
		t.Errorf("no warning of the call still running:\n%s", logs)
	}
	if err := a.Close(); err != nil { // what run does next
		t.Errorf("closing the app: %v", err)
	}
}
