package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview58ShutdownEndsStreamsKeepsCalls: a go-sdk client holds an MCP
// event stream open (its GET, or its subscriptions/listen), which kept its
// connection active at shutdown: serve-http waited out its whole grace and
// then closed the connections left, the call under way's with them, whose
// answer was lost though the call ran. The streams end at once now, and a
// call that ends within the grace is answered.
func TestReview58ShutdownEndsStreamsKeepsCalls(t *testing.T) {
	defer func(g time.Duration) { shutdownGrace = g }(shutdownGrace)
	shutdownGrace = 3 * time.Second

	tickets := &TicketSystem{}
	a, err := newApp(appOptions{
		ConfigName: "server.yaml", Config: testConfig(t, func(c *config) { allowWrites(c); c.DryRun = false }),
		AuditDir: t.TempDir(), Tickets: tickets, Marks: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- serveHTTP(ctx, a, ln, slog.New(slog.NewTextHandler(io.Discard, nil))) }()

	cl := mcp.NewClient(&mcp.Implementation{Name: "review58", Version: "1"}, nil)
	cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:   "http://" + ln.Addr().String() + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{"token-alice", http.DefaultTransport}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	tickets.mu.Lock() // the downstream holds the write until released
	released := false
	release := func() {
		if !released {
			released = true
			tickets.mu.Unlock()
		}
	}
	t.Cleanup(release)
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	answered := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_ticket",
			Arguments: map[string]any{"title": "t", "body": "b"}})
		answered <- result{res, err}
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
	start := time.Now()
	cancel() // SIGTERM
	time.AfterFunc(300*time.Millisecond, func() { tickets.mu.Unlock() })
	released = true
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serveHTTP: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serveHTTP did not return")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("shutdown took %v with an event stream open and a call of 300ms under way (grace %v)", d, shutdownGrace)
	}
	r := <-answered
	if r.err != nil || r.res == nil || r.res.IsError {
		t.Errorf("the call under way at shutdown: %v %+v; want its answer", r.err, r.res)
	}
}
