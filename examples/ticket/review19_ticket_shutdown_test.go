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

// TestReview19RESTWriteUnderWayAtShutdownIsRecorded: the REST side of
// TestShutdownWaitsForCallsBeforeTheAuditCloses. A real write over REST
// still running when SIGTERM's grace runs out (its connection is then
// closed) completes, and keeps its intent and outcome records: serveHTTP
// returns only once the call on the REST session has ended.
func TestReview19RESTWriteUnderWayAtShutdownIsRecorded(t *testing.T) {
	defer func(g time.Duration) { shutdownGrace = g }(shutdownGrace)
	shutdownGrace = 100 * time.Millisecond

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
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/tools/create_ticket/call",
			strings.NewReader(`{"arguments":{"title":"t","body":"b"}}`))
		req.Header.Set("Authorization", "Bearer token-alice")
		req.Header.Set("X-Session-Id", "s")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
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
	for name, query := range map[string]func() ([]audit.Event, error){
		"audit.jsonl": func() ([]audit.Event, error) {
			return audit.QueryJSONL(a.jsonlPath(), audit.Filter{Tool: "create_ticket"})
		},
		"audit.db": func() ([]audit.Event, error) {
			db, err := audit.OpenSQLite(a.dir + "/" + auditSQLite)
			if err != nil {
				return nil, err
			}
			defer db.Close()
			return audit.QuerySQL(context.Background(), db, audit.SQLite, audit.Filter{Tool: "create_ticket"})
		},
	} {
		evs, err := query()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var phases []audit.Phase
		for _, e := range evs {
			phases = append(phases, e.Phase)
		}
		if len(evs) != 2 || evs[0].Phase != audit.PhaseIntent || evs[1].Phase != audit.PhaseOutcome || !evs[1].Allowed || evs[1].SessionID != "rest-s@alice" {
			t.Errorf("%s: records of the write %v, want its intent and an allowed outcome in rest-s@alice", name, phases)
		}
	}
	if n := len(tickets.Created()); n != 1 {
		t.Errorf("%d tickets created, want 1", n)
	}
}
