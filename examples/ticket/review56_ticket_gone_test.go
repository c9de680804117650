package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestReview56RESTClientGoneIsNoError: a REST client that gives up on a
// slow call (its timeout, a closed connection) is no failure of the
// server's: the call goes on in its session and is answered and audited
// there, as over /mcp, where the library logs a client that left at INFO.
// The REST adapter logged each such client at level ERROR ("ticket: REST
// call failed", err="context canceled"), so that an operator alerting on
// ERROR was paged for every client timeout. It is now an INFO line.
func TestReview56RESTClientGoneIsNoError(t *testing.T) {
	ta := newTestApp(t, func(c *config) { allowWrites(c); c.DryRun = false })
	logs := &syncBuffer{}
	srv := httptest.NewServer(httpHandler(ta.app, ta.rest, slog.New(slog.NewTextHandler(logs, nil))))
	t.Cleanup(srv.Close)

	ta.tickets.mu.Lock() // the ticket system hangs
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/tools/create_ticket/call",
		strings.NewReader(`{"arguments": {"title": "Broken build", "body": "CI red on main"}}`))
	req.Header.Set("Authorization", "Bearer token-alice")
	req.Header.Set("X-Session-Id", "gone")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("the call was answered (%d) while the ticket system hung", resp.StatusCode)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "REST") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	ta.tickets.mu.Unlock()
	for len(ta.tickets.Created()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(ta.tickets.Created()); n != 1 {
		t.Errorf("%d tickets created, want 1 (the call goes on)", n)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a REST client that went away is logged as an error:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "level=INFO") {
		t.Errorf("a REST client that went away is not logged:\n%s", logs)
	}
}
