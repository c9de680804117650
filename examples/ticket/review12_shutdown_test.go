package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestShutdownWaitsForCallsBeforeTheAuditCloses: serve-http closes the
// audit sinks after serveHTTP returns (run's deferred app.Close). A write
// over /mcp still running when the shutdown grace ran out lost its outcome
// record: serveHTTP returned at once, and the record met closed sinks
// (REST calls were waited for already: closing their sessions waits).
// serveHTTP now returns once the calls under way have ended (waiting at
// most shutdownWait), so every started write keeps both its records.
func TestShutdownWaitsForCallsBeforeTheAuditCloses(t *testing.T) {
	replied := make(chan error, 1)
	a, _ := shutdownMidWrite(t, func(base string) {
		cs := connectHTTP(t, base, "token-alice")
		go func() {
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_ticket", Arguments: map[string]any{"title": "t", "body": "b"}})
			replied <- err
		}()
	})
	// The client may or may not get the answer (its connection was
	// closed); the trail must have it either way.
	select {
	case <-replied:
	case <-time.After(5 * time.Second):
	}
	evs, err := audit.QueryJSONL(a.jsonlPath(), audit.Filter{Tool: "create_ticket"})
	if err != nil {
		t.Fatal(err)
	}
	var phases []audit.Phase
	for _, e := range evs {
		phases = append(phases, e.Phase)
	}
	if len(evs) != 2 || evs[1].Phase != audit.PhaseOutcome || !evs[1].Allowed {
		t.Errorf("records of the write: %v, want its intent and an allowed outcome", phases)
	}
}

// shutdownMidWrite serves a ticket app over HTTP with writes on and a
// shutdown grace of 100 ms, makes the ticket system hang, has start (given
// the server's base URL) begin a create_ticket call, waits for its intent
// record, then shuts the server down (SIGTERM: serveHTTP's context ends)
// while the write is under way; the ticket system comes back 600 ms later,
// past the grace. It returns once serveHTTP has returned and the app is
// closed, as run does next.
func shutdownMidWrite(t *testing.T, start func(base string)) (*app, *TicketSystem) {
	t.Helper()
	defer func(g time.Duration) { shutdownGrace = g }(shutdownGrace)
	shutdownGrace = 100 * time.Millisecond

	// Not newTestApp: the test closes the app itself, once, as run does.
	tickets := &TicketSystem{}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := newApp(appOptions{
		ConfigName: "server.yaml", Config: testConfig(t, func(c *config) { allowWrites(c); c.DryRun = false }),
		AuditDir: t.TempDir(), Tickets: tickets, Marks: quiet,
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
	go func() { done <- serveHTTP(ctx, a, ln, quiet) }()

	tickets.mu.Lock() // the ticket system hangs
	start("http://" + ln.Addr().String())
	deadline := time.Now().Add(5 * time.Second)
	for {
		evs, _ := audit.QueryJSONL(a.jsonlPath(), audit.Filter{Tool: "create_ticket"})
		if len(evs) == 1 && evs[0].Phase == audit.PhaseIntent {
			break
		}
		a.flush()
		if time.Now().After(deadline) {
			t.Fatal("the write's intent record never appeared")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel() // SIGTERM
	time.AfterFunc(600*time.Millisecond, tickets.mu.Unlock)
	if err := <-done; err != nil {
		t.Fatalf("serveHTTP: %v", err)
	}
	if err := a.Close(); err != nil { // what run does next
		t.Fatalf("closing the app: %v", err)
	}
	return a, tickets
}
