package gateway

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// closeCounter is a request body that counts its Close calls.
type closeCounter struct {
	io.Reader
	closed atomic.Int64
}

func (c *closeCounter) Close() error { c.closed.Add(1); return nil }

// TestFinal16InProcessClosesRequestBody: an http.RoundTripper must close
// the request's body, on errors too (net/http's contract; a server closes
// it after its handler returns). The in-process round trip of CheckPins
// left it open: harmless for the go-sdk's bodies (byte readers), not for
// a body that holds a file or a connection.
func TestFinal16InProcessClosesRequestBody(t *testing.T) {
	var runs atomic.Int64
	srv, _ := pinnedServer(&runs)
	down := newServer(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	g, err := New(down.URL, DemoTokens(), &Options{Pins: TrustOnFirstUse(), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, body string
	}{
		{"answered", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{"refused", `not json`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &closeCounter{Reader: strings.NewReader(tc.body)}
			req, err := http.NewRequest(http.MethodPost, "http://mcpguard-gateway.invalid"+g.path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := inProcess{g: g, caller: &policy.Principal{Subject: "pin-check"}}.RoundTrip(req)
			if err != nil {
				t.Fatalf("RoundTrip: %v", err)
			}
			_, _ = io.Copy(io.Discard, resp.Body) // to the end: the handler has returned
			resp.Body.Close()
			if n := body.closed.Load(); n != 1 {
				t.Errorf("request body closed %d times after the answer was read, want 1", n)
			}
		})
	}
}
