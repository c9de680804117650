package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview19dIdleTimeoutSparesStreamsAndSlowCalls: serve-http closes a
// connection idle for httpIdleTimeout, with no request on it. A request
// under way is not idle however long it is quiet: an MCP GET event stream
// stays open past the idle timeout and still carries the server's next
// message, and a call that runs longer (over /mcp and over REST) is
// answered.
func TestReview19dIdleTimeoutSparesStreamsAndSlowCalls(t *testing.T) {
	defer func(d time.Duration) { httpIdleTimeout = d }(httpIdleTimeout)
	httpIdleTimeout = 100 * time.Millisecond
	quiet := 5 * httpIdleTimeout
	ta := newTestApp(t, func(c *config) { allowWrites(c); c.DryRun = false })
	base := startHTTP(t, ta)

	t.Run("event_stream", func(t *testing.T) {
		sid := review17Open(t, base, "token-alice")
		c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close() // ends the stream (its body is not drained)
		_, err = io.WriteString(c, "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"+
			"Authorization: Bearer token-alice\r\nMcp-Protocol-Version: 2025-06-18\r\nMcp-Session-Id: "+sid+"\r\n\r\n")
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(c)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("GET /mcp: %d %q, want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		time.Sleep(quiet) // nothing on the stream for 5 idle timeouts

		var ss *mcp.ServerSession
		for s := range ta.server.Sessions() {
			if s.ID() == sid {
				ss = s
			}
		}
		if ss == nil {
			t.Fatalf("session %s is gone after %v without traffic", sid, quiet)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { _ = ss.Ping(ctx, nil) }() // sent on the stream; not answered here
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		body := bufio.NewReader(resp.Body)
		for {
			line, err := body.ReadString('\n')
			if err != nil {
				t.Fatalf("the event stream, quiet for %v: %v before the server's ping (closed as idle?)", quiet, err)
			}
			if strings.HasPrefix(line, "data:") && strings.Contains(line, `"method":"ping"`) {
				break
			}
		}
	})

	// The ticket system hangs for a while: the calls are quiet, not idle.
	slow := func(t *testing.T, call func() error) {
		t.Helper()
		before := len(ta.tickets.Created())
		ta.tickets.mu.Lock()
		done := make(chan error, 1)
		go func() { done <- call() }()
		time.Sleep(quiet)
		ta.tickets.mu.Unlock()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("a call running for %v (idle timeout %v): %v", quiet, httpIdleTimeout, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the call never ended")
		}
		if n := len(ta.tickets.Created()) - before; n != 1 {
			t.Errorf("%d tickets created, want 1", n)
		}
	}
	t.Run("mcp_call", func(t *testing.T) {
		cs := connectHTTP(t, base, "token-alice")
		slow(t, func() error {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "create_ticket", Arguments: ticketArgs()})
			if err == nil && res.IsError {
				t.Errorf("create_ticket refused: %v", res.StructuredContent)
			}
			return err
		})
	})
	t.Run("rest_call", func(t *testing.T) {
		slow(t, func() error {
			req, _ := http.NewRequest(http.MethodPost, base+"/tools/create_ticket/call", strings.NewReader(`{"arguments":{"title":"t","body":"b"}}`))
			req.Header.Set("Authorization", "Bearer token-alice")
			req.Header.Set("X-Session-Id", "slow")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("REST create_ticket: %d, want 200", resp.StatusCode)
			}
			return nil
		})
	})
}
