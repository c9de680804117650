package mcpguard_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview65kStalledHTTPConfirm: over stateful Streamable HTTP a handler
// that Guard.Wrap or Guard.AddTool guards on a server no guard is
// installed on never has the guard ask an older client to confirm (no
// guard saw the session opened: Wrap's doc), so a raw TCP client that
// sends the call and then reads nothing holds nothing: the call is
// refused CONFIRMATION_REQUIRED at once, and Wait returns. (The setting
// MCPGODEBUG=blockingcancelnotify=1 is never reached: no request is sent.)
func TestReview65kStalledHTTPConfirm(t *testing.T) {
	for _, mode := range []string{"wrap", "addtool"} {
		t.Run(mode, func(t *testing.T) {
			pol, err := policy.New(policy.Config{
				Tools:          []policy.ToolRule{{Name: "pay", Class: policy.Write, Confirm: true}},
				WriteAllowlist: []string{"pay"},
			})
			if err != nil {
				t.Fatal(err)
			}
			sink := &memSink{}
			auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
				return &mcpguard.Identity{Principal: &policy.Principal{Subject: "ann"}}, nil
			})
			g, err := mcpguard.New(pol, auth, &mcpguard.Options{
				Audit: sink, Confirmer: testSigner(t, &confirm.Options{TTL: time.Second}),
				Logger: slog.New(slog.DiscardHandler),
			})
			if err != nil {
				t.Fatal(err)
			}
			srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
			tl := &mcp.Tool{Name: "pay", InputSchema: map[string]any{"type": "object"},
				Annotations: &mcp.ToolAnnotations{DestructiveHint: new(bool)}}
			h := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "paid"}}}, nil
			}
			if mode == "addtool" {
				if err := g.AddTool(srv, tl, h); err != nil {
					t.Fatal(err)
				}
			} else {
				wh, err := g.Wrap(tl, h)
				if err != nil {
					t.Fatal(err)
				}
				srv.AddTool(tl, wh)
			}
			hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
			t.Cleanup(hs.Close)

			post := func(body, sid string) *http.Response {
				t.Helper()
				req, _ := http.NewRequest("POST", hs.URL, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
				if sid != "" {
					req.Header.Set("Mcp-Session-Id", sid)
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			res := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
				`"capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"old","version":"1"}}}`, "")
			sid := res.Header.Get("Mcp-Session-Id")
			res.Body.Close()
			if sid == "" {
				t.Fatalf("initialize: %s, no session id", res.Status)
			}
			post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid).Body.Close()

			// The call, from a client that then reads nothing.
			host := strings.TrimPrefix(hs.URL, "http://")
			conn, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			conn.(*net.TCPConn).SetReadBuffer(4096)
			body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"pay","arguments":{}}}`
			fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
				"Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2025-11-25\r\n"+
				"Mcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n%s", host, sid, len(body), body)

			for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
				for _, e := range sink.all() {
					if e.Tool == "pay" && e.Phase == audit.PhaseOutcome {
						if e.Allowed || e.Code != string(mcpguard.CodeConfirmationRequired) {
							t.Fatalf("outcome %+v, want CONFIRMATION_REQUIRED", e)
						}
						ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
						defer cancel()
						if err := g.Wait(ctx); err != nil {
							t.Fatalf("Wait: %v", err)
						}
						return
					}
				}
				if time.Since(start) > 3*time.Second {
					t.Fatalf("no outcome 3 s after the call: %+v", sink.all())
				}
			}
		})
	}
}
