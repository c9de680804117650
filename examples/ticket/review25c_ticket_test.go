package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview25cCrossSiteSpellings: crossSite judges each spelling of Origin
// and Sec-Fetch-Site a browser (or a client that is not one) may send. A
// page of the server's own origin is served whatever the letter case; an
// origin spelt otherwise than a browser spells the server's own (a
// trailing slash, https, another port, a port the Host lacks), "null", an
// empty or a second Origin, and a Sec-Fetch-Site other than same-origin or
// none (an unknown value, a second header) are refused: they fail closed.
func TestReview25cCrossSiteSpellings(t *testing.T) {
	for _, c := range []struct {
		name, host string
		hdr        http.Header
		want       bool
	}{
		{"no_headers", "127.0.0.1:8080", http.Header{}, false},
		{"own_origin", "127.0.0.1:8080", http.Header{"Origin": {"http://127.0.0.1:8080"}}, false},
		{"own_origin_upper_case", "LocalHost:8080", http.Header{"Origin": {"http://localhost:8080"}}, false},
		{"own_origin_port_80", "localhost", http.Header{"Origin": {"http://localhost"}}, false},
		{"own_origin_ipv6", "[::1]:8080", http.Header{"Origin": {"http://[::1]:8080"}, "Sec-Fetch-Site": {"same-origin"}}, false},
		{"address_bar", "127.0.0.1:8080", http.Header{"Sec-Fetch-Site": {"none"}}, false},
		{"trailing_slash", "127.0.0.1:8080", http.Header{"Origin": {"http://127.0.0.1:8080/"}}, true},
		{"https", "127.0.0.1:8080", http.Header{"Origin": {"https://127.0.0.1:8080"}}, true},
		{"other_port", "127.0.0.1:8080", http.Header{"Origin": {"http://127.0.0.1:3000"}}, true},
		{"origin_without_host_port", "127.0.0.1:8080", http.Header{"Origin": {"http://127.0.0.1"}}, true},
		{"other_loopback_name", "127.0.0.1:8080", http.Header{"Origin": {"http://localhost:8080"}}, true},
		{"ipv6_other_port", "[::1]:8080", http.Header{"Origin": {"http://[::1]:3000"}}, true},
		{"null", "127.0.0.1:8080", http.Header{"Origin": {"null"}}, true},
		{"empty_origin", "127.0.0.1:8080", http.Header{"Origin": {""}}, true},
		{"two_origins_same", "127.0.0.1:8080", http.Header{"Origin": {"http://127.0.0.1:8080", "http://127.0.0.1:8080"}}, true},
		{"cross_site", "127.0.0.1:8080", http.Header{"Sec-Fetch-Site": {"cross-site"}}, true},
		{"same_site", "127.0.0.1:8080", http.Header{"Sec-Fetch-Site": {"same-site"}}, true},
		{"unknown_site_value", "127.0.0.1:8080", http.Header{"Sec-Fetch-Site": {"same-party"}}, true},
		{"empty_site_value", "127.0.0.1:8080", http.Header{"Sec-Fetch-Site": {""}}, true},
		{"two_site_headers", "127.0.0.1:8080", http.Header{"Sec-Fetch-Site": {"same-origin", "cross-site"}}, true},
		{"two_site_values_joined", "127.0.0.1:8080", http.Header{"Sec-Fetch-Site": {"same-origin, cross-site"}}, true},
		{"same_origin_but_foreign_origin", "127.0.0.1:8080", http.Header{"Origin": {"https://evil.example"}, "Sec-Fetch-Site": {"same-origin"}}, true},
	} {
		r := httptest.NewRequest(http.MethodPost, "/tools/search_docs/call", nil)
		r.Host = c.host
		r.Header = c.hdr
		if got := crossSite(r); got != c.want {
			t.Errorf("%s: crossSite(Host %q, %v) = %v, want %v", c.name, c.host, c.hdr, got, c.want)
		}
	}
}

// TestReview25cPreflightHeadAndIPv6: over serve-http, a CORS preflight
// (OPTIONS) and a HEAD from a page of another origin are refused 403 with
// no audit record, on every path; the same requests from a client that is
// not a browser are answered by the handlers as before; and a page of the
// server's own origin on [::1] is served.
func TestReview25cPreflightHeadAndIPv6(t *testing.T) {
	ta := newTestApp(t, nil)
	base := startHTTP(t, ta)
	do := func(method, url string, hdr http.Header) int {
		t.Helper()
		req, err := http.NewRequest(method, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, vs := range hdr {
			req.Header[k] = vs
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	records := func() int { return len(ta.events(t, audit.Filter{})) }
	preflight := http.Header{
		"Origin": {"https://evil.example"}, "Sec-Fetch-Site": {"cross-site"}, "Sec-Fetch-Mode": {"cors"},
		"Access-Control-Request-Method": {"POST"}, "Access-Control-Request-Headers": {"authorization,content-type"},
	}
	for _, path := range []string{"/mcp", "/tools", "/tools/create_ticket/call", "/nowhere"} {
		before := records()
		if s := do(http.MethodOptions, base+path, preflight); s != http.StatusForbidden {
			t.Errorf("preflight OPTIONS %s: %d, want 403", path, s)
		}
		if s := do(http.MethodHead, base+path, http.Header{"Sec-Fetch-Site": {"cross-site"}}); s != http.StatusForbidden {
			t.Errorf("cross-site HEAD %s: %d, want 403", path, s)
		}
		if n := records() - before; n != 0 {
			t.Errorf("%s: %d audit records for refused cross-site requests, want none", path, n)
		}
	}
	if s := do(http.MethodHead, base+"/tools", nil); s != http.StatusOK {
		t.Errorf("HEAD /tools from a client that is not a browser: %d, want 200", s)
	}
	if s := do(http.MethodOptions, base+"/tools/create_ticket/call", nil); s != http.StatusMethodNotAllowed {
		t.Errorf("OPTIONS /tools/create_ticket/call from a client that is not a browser: %d, want 405", s)
	}

	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	ln.Close()
	ta6 := newTestApp(t, nil)
	base6 := startHTTPOn(t, ta6, "[::1]:0")
	own := http.Header{"Origin": {base6}, "Sec-Fetch-Site": {"same-origin"}}
	if !strings.HasPrefix(base6, "http://[::1]:") {
		t.Fatalf("base %q", base6)
	}
	if s := do(http.MethodGet, base6+"/tools", own); s != http.StatusOK {
		t.Errorf("GET /tools on [::1] from a page of its own origin: %d, want 200", s)
	}
	if s := do(http.MethodGet, base6+"/tools", http.Header{"Origin": {"http://127.0.0.1" + strings.TrimPrefix(base6, "http://[::1]")}}); s != http.StatusForbidden {
		t.Errorf("GET /tools on [::1] from a page of 127.0.0.1: %d, want 403", s)
	}
}

// startHTTPOn serves ta over HTTP on addr, a loopback address, and returns
// its base URL.
func startHTTPOn(t *testing.T, ta *testApp, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveHTTP(ctx, ta.app, ln, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return "http://" + ln.Addr().String()
}

// browserHeaders adds to every request the headers a browser page of
// origin sends to its own origin.
type browserHeaders struct {
	origin, site string
	base         http.RoundTripper
}

func (b browserHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Origin", b.origin)
	r.Header.Set("Sec-Fetch-Site", b.site)
	return b.base.RoundTrip(r)
}

// TestReview25cSameOriginMCPClient: an MCP client in a page of the
// server's own origin (every request with Origin and Sec-Fetch-Site
// same-origin) opens a session, lists the tools, calls one and closes the
// session over /mcp; one in a page of another origin cannot connect.
func TestReview25cSameOriginMCPClient(t *testing.T) {
	ta := newTestApp(t, nil)
	base := startHTTP(t, ta)
	connect := func(origin, site string) (*mcp.ClientSession, error) {
		cl := mcp.NewClient(&mcp.Implementation{Name: "page", Version: "v1"}, nil)
		return cl.Connect(t.Context(), &mcp.StreamableClientTransport{
			Endpoint: base + "/mcp",
			HTTPClient: &http.Client{Transport: browserHeaders{origin, site,
				bearer{"token-alice", http.DefaultTransport}}},
		}, nil)
	}
	cs, err := connect(base, "same-origin")
	if err != nil {
		t.Fatalf("same-origin page: %v", err)
	}
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Errorf("same-origin page: tools/list: %v", err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": ""}})
	if code := toolCode(t, res, err); code != "" {
		t.Errorf("same-origin page: search_docs refused %s", code)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("same-origin page: close: %v", err)
	}
	before := len(ta.events(t, audit.Filter{}))
	if cs, err := connect("http://localhost:6274", "same-site"); err == nil {
		cs.Close()
		t.Errorf("a page of another origin opened an MCP session")
	}
	if n := len(ta.events(t, audit.Filter{})) - before; n != 0 {
		t.Errorf("%d audit records for a page of another origin, want none", n)
	}
}
