package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview22OriginNotForwarded: a page the gateway lets through (a
// listed origin, or the gateway's own) reaches a downstream that checks
// Origin itself, as the MCP Streamable HTTP transport asks servers to: the
// go-sdk's recommended http.CrossOriginProtection (which reads
// Sec-Fetch-Site, then Origin against the Host), or a Python SDK's or
// the shop example's list of loopback origins. The gateway judged the
// Origin, and sends the downstream its own Host, so it sends neither
// Origin nor Sec-Fetch-Site: forwarded, they made the downstream refuse
// (403) every page the gateway allowed.
func TestReview22OriginNotForwarded(t *testing.T) {
	const app = "https://app.example.com"
	srv := mcp.NewServer(&mcp.Implementation{Name: "down", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "get_customer_record"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	var mu sync.Mutex
	var seen []http.Header
	record := func(r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
	}
	for _, tc := range []struct {
		name string
		down http.Handler
	}{
		{"cross_origin_protection", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			record(r)
			http.NewCrossOriginProtection().Handler(sdk).ServeHTTP(w, r)
		})},
		{"loopback_origins", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			record(r)
			if o := r.Header.Get("Origin"); o != "" && !strings.HasPrefix(o, "http://127.0.0.1:") && !strings.HasPrefix(o, "http://localhost:") {
				http.Error(w, "Invalid Origin header", http.StatusForbidden)
				return
			}
			sdk.ServeHTTP(w, r)
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			down := newServer(t, tc.down)
			// Behind a proxy on the same machine that passes on the
			// public Host, as a page reaches it.
			g, err := New(down.URL, DemoTokens(), &Options{Logger: discardLogger(), AllowedOrigins: []string{app}, DisableLocalhostProtection: true})
			if err != nil {
				t.Fatal(err)
			}
			gw := newServer(t, g)
			own := "http://gw.example"
			for _, page := range []struct{ origin, site string }{
				{app, "cross-site"}, {app, ""}, {own, "same-origin"}, {own, ""},
			} {
				req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(call("1", "get_customer_record", "")))
				req.Host = "gw.example"
				req.Header.Set("Authorization", viewer)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Origin", page.origin)
				if page.site != "" {
					req.Header.Set("Sec-Fetch-Site", page.site)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"text":"ok"`) {
					t.Errorf("Origin %s, Sec-Fetch-Site %q: %d %s; want the tool's answer", page.origin, page.site, resp.StatusCode, b)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, h := range seen {
				if h.Get("Origin") != "" || h.Get("Sec-Fetch-Site") != "" {
					t.Errorf("the downstream got Origin %q, Sec-Fetch-Site %q", h.Get("Origin"), h.Get("Sec-Fetch-Site"))
				}
			}
			seen = nil
		})
	}
}
