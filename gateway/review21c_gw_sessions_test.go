package gateway

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawRequest sends one HTTP/1.1 request over TCP to addr, its header lines
// written as given (so that white space around a value, or a header named
// twice, really goes on the wire), and returns the status.
func rawRequest(t *testing.T, addr, method, body string, lines ...string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	b.WriteString(method + " /mcp HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n")
	b.WriteString("Authorization: Bearer viewer-token\r\nAccept: application/json, text/event-stream\r\n")
	b.WriteString("Mcp-Protocol-Version: 2025-06-18\r\n")
	if body != "" {
		b.WriteString("Content-Type: application/json\r\n")
	}
	for _, l := range lines {
		b.WriteString(l + "\r\n")
	}
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s %q: %v", method, lines, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestReview21cSessionOfAnother: a real go-sdk downstream (stateful) behind
// the gateway over TCP. The viewer, with its own valid token, presents the
// admin's session id: as is, in other case, with spaces or tabs around
// it, twice (two header lines, or one with a comma), on POST, GET and
// DELETE. Every request is refused (404, or 400 for two ids) and none
// reaches the downstream with the viewer's identity; the admin's session
// still works. Once the admin's DELETE ended the session, the viewer
// presenting the id again is answered 404 by the downstream and gets no
// hold on it.
func TestReview21cSessionOfAnother(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var resets atomic.Int64
	srv := sdkServer(&resets)
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var mu sync.Mutex
	var leaked []string
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeaderSubject) == "viewer" && r.Header.Get(hdrSession) != "" {
			mu.Lock()
			leaked = append(leaked, r.Method+" "+r.Header.Get(hdrSession))
			mu.Unlock()
		}
		sdk.ServeHTTP(w, r)
	}))
	g, err := New(down.URL, DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	addr := strings.TrimPrefix(gw.URL, "http://")

	c := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   gw.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{"admin-token", http.DefaultTransport}},
		MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sid := cs.ID()
	if sid == "" {
		t.Fatal("the downstream issued no session id")
	}
	ping := `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`
	for _, lines := range [][]string{
		{"Mcp-Session-Id: " + sid},
		{"Mcp-Session-Id: " + strings.ToLower(sid)},
		{"Mcp-Session-Id: " + strings.ToUpper(sid)},
		{"Mcp-Session-Id:    " + sid + "   "},
		{"Mcp-Session-Id:\t" + sid + "\t"},
		{"Mcp-Session-Id: " + sid, "Mcp-Session-Id: viewer-own"},
		{"Mcp-Session-Id: viewer-own", "Mcp-Session-Id: " + sid},
		{"Mcp-Session-Id: viewer-own," + sid},
		{"Mcp-Session-Id: " + sid + ",viewer-own"},
		{"mcp-session-id: " + sid},
		{"Mcp_Session_Id: " + sid},
	} {
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			body := ""
			if method == http.MethodPost {
				body = ping
			}
			st := rawRequest(t, addr, method, body, lines...)
			two := len(lines) == 2
			switch {
			case strings.HasPrefix(lines[0], "Mcp_"):
				// Not a session header: never forwarded (outboundHeader),
				// so the request is judged without a session.
			case two && st != http.StatusBadRequest:
				t.Errorf("viewer %s with %q: status %d, want 400", method, lines, st)
			case !two && strings.Contains(lines[0], ",") && st != http.StatusNotFound:
				t.Errorf("viewer %s with %q: status %d, want 404 (an id no one holds, that the downstream does not know)", method, lines, st)
			case !two && !strings.Contains(lines[0], ",") && st != http.StatusNotFound:
				t.Errorf("viewer %s with %q: status %d, want 404", method, lines, st)
			}
		}
	}
	mu.Lock()
	for _, l := range leaked {
		if strings.Contains(strings.ToLower(l), strings.ToLower(sid)) && !strings.Contains(l, ",") {
			t.Errorf("the downstream got the viewer's %s", l)
		}
	}
	mu.Unlock()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("the admin's own session after the viewer's attempts: %v", err)
	}
	if err := cs.Close(); err != nil {
		t.Fatalf("the admin's DELETE: %v", err)
	}
	// The session is over: the viewer presenting its id is answered by
	// the downstream (404) and the id is bound to no one afterwards.
	for _, method := range []string{http.MethodPost, http.MethodDelete} {
		body := ""
		if method == http.MethodPost {
			body = ping
		}
		if st := rawRequest(t, addr, method, body, "Mcp-Session-Id: "+sid); st != http.StatusNotFound {
			t.Errorf("viewer %s on the ended session: status %d, want 404", method, st)
		}
	}
	if !g.sessions.allows(sid, "admin") || !g.sessions.allows(sid, "viewer") {
		t.Error("the ended session's id is still held by someone after the downstream said 404")
	}
}
