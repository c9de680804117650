package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview19IdleHTTPConnectionsAreClosed: serve-http set no idle
// timeout, so a keep-alive connection left idle after a request (GET
// /tools needs no token) was held for ever: 8000 of them took the server
// from 28 to 180 MB and 8000 descriptors, and more would exhaust its
// descriptors (no new client, no audit file). The server now closes a
// connection idle for httpIdleTimeout.
func TestReview19IdleHTTPConnectionsAreClosed(t *testing.T) {
	defer func(d time.Duration) { httpIdleTimeout = d }(httpIdleTimeout)
	httpIdleTimeout = 200 * time.Millisecond
	base := startHTTP(t, newTestApp(t, nil))

	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for i := range 2 { // the connection serves requests while it is used
		if _, err := io.WriteString(c, "GET /tools HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("request %d: status %d, close %v; want 200 on a kept-alive connection", i+1, resp.StatusCode, resp.Close)
		}
		time.Sleep(50 * time.Millisecond)
	}
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = r.ReadByte()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("an idle keep-alive connection was still open %v after its last request", time.Since(start).Round(time.Second))
	}
	if !errors.Is(err, io.EOF) {
		t.Fatalf("reading the idle connection: %v, want EOF (closed by the server)", err)
	}

	// An MCP client idle for longer goes on in its session: its next
	// request opens a new connection.
	cs := connectHTTP(t, base, "token-alice")
	for i := range 2 {
		res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": ""}})
		if code := toolCode(t, res, err); code != "" {
			t.Fatalf("call %d after an idle pause: %s", i+1, code)
		}
		time.Sleep(3 * httpIdleTimeout)
	}
}

// TestReview19RESTArgumentRefusalsAreTheGuards: an argument with a control
// character, one longer than 64 KiB and a number out of range were
// refused over REST by the check of the body's shape, before the guard,
// as `body must be a JSON object {"arguments": {...}} of at most 1 MiB`:
// a well-formed body, told it was not one, and not which argument was
// wrong. They now reach the guard, which answers as it does over MCP.
func TestReview19RESTArgumentRefusalsAreTheGuards(t *testing.T) {
	ta := newTestApp(t, func(c *config) { allowWrites(c); c.RateLimit.CallsPerMin = 100; c.RateLimit.CostPerSession = 100 })
	base := startHTTP(t, ta)
	for _, c := range []struct{ name, tool, args string }{
		{"bell_in_query", "search_docs", `{"query":"a\u0007b"}`},
		{"escape_in_title", "create_ticket", `{"title":"\u001b[2Jx","body":""}`},
		{"long_body", "create_ticket", `{"title":"t","body":"` + strings.Repeat("x", 70000) + `"}`},
		{"huge_number", "search_docs", `{"query":1e400}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			mcp := ta.call(t, "token-alice", "mcp-"+c.name, c.tool, json.RawMessage(c.args))
			if mcp.code != "INVALID_ARGUMENTS" {
				t.Fatalf("the guard's answer: code %q %v, want INVALID_ARGUMENTS", mcp.code, mcp.wire)
			}
			want := mcp.content["error"].(map[string]any)["message"]
			rep := restPost(t, base, c.tool, "token-alice", "rest-"+c.name, `{"arguments":`+c.args+`}`)
			e, _ := rep.body["error"].(map[string]any)
			if rep.status != http.StatusBadRequest || rep.code() != "INVALID_ARGUMENTS" || e["message"] != want {
				t.Errorf("REST: %d %s %q, want 400 INVALID_ARGUMENTS %q (the guard's)", rep.status, rep.code(), e["message"], want)
			}
		})
	}
	// The body's own shape is still checked before the guard.
	for _, body := range []string{`{"arguments":{"query":""},"x":1}`, `{"arguments":{"query":""}}}`, `[]`} {
		rep := restPost(t, base, "search_docs", "token-alice", "shape", body)
		e, _ := rep.body["error"].(map[string]any)
		if msg, _ := e["message"].(string); rep.status != http.StatusBadRequest || !strings.HasPrefix(msg, "body must be") {
			t.Errorf("body %s: %d %q, want 400 body must be ...", body, rep.status, msg)
		}
	}
}
