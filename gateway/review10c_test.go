package gateway

import (
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestCORSPreflightAllowsStandardHeaders: a browser MCP client of protocol
// 2026-07-28 must send Mcp-Method, Mcp-Name and, for tools that declare
// them, Mcp-Param-* headers; its preflight names them in
// Access-Control-Request-Headers, and the browser sends the request only if
// every one is in Access-Control-Allow-Headers (compared without case). A
// listed origin's preflight allows them all, and the request itself then
// passes with them.
func TestCORSPreflightAllowsStandardHeaders(t *testing.T) {
	const app = "https://app.example.com"
	rg := newRig(t, &Options{AllowedOrigins: []string{app}})
	requested := []string{"authorization", "content-type", "mcp-protocol-version", "mcp-method", "mcp-name", "mcp-param-region", "Mcp-Param-Customer-Id"}
	req, err := http.NewRequest(http.MethodOptions, rg.url+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", app)
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", strings.Join(requested, ","))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != app {
		t.Fatalf("preflight: %d, ACAO %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	allowed := map[string]bool{}
	for _, v := range resp.Header.Values("Access-Control-Allow-Headers") {
		for _, name := range strings.Split(v, ",") {
			allowed[strings.ToLower(strings.TrimSpace(name))] = true
		}
	}
	for _, name := range requested {
		if !allowed[strings.ToLower(name)] {
			t.Errorf("preflight does not allow %q (a browser would not send the request): Access-Control-Allow-Headers %q", name, resp.Header.Values("Access-Control-Allow-Headers"))
		}
	}
	// Only Mcp-Param-* names are taken from the request: another header the
	// page asks for is not allowed because it asked.
	req.Header.Set("Access-Control-Request-Headers", "x-other, mcp-param-a b")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := strings.ToLower(strings.Join(resp.Header.Values("Access-Control-Allow-Headers"), ",")); strings.Contains(got, "x-other") || strings.Contains(got, "mcp-param-a") {
		t.Errorf("preflight echoed a header that is not an Mcp-Param-* name: %q", got)
	}

	got := rg.post(t, viewer, call("1", "get_customer_record", ""), "Origin", app,
		"Mcp-Method", "tools/call", "Mcp-Name", "get_customer_record", "Mcp-Param-Region", "eu")
	if got.status != http.StatusOK || got.header.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("call with the standard headers: %d, ACAO %q", got.status, got.header.Get("Access-Control-Allow-Origin"))
	}
}

// TestOriginDefaultPort: browsers leave the scheme's default port out of
// Origin (and of Host), so an AllowedOrigins entry that spells it out
// ("https://app.example.com:443") means the origin they send, and a Host
// that carries it (a proxy that adds the port) is still the request's own
// origin. An entry browsers can never send (a host that is not ASCII:
// they send its punycode form; an empty or non-canonical port) is refused
// by New.
func TestOriginDefaultPort(t *testing.T) {
	rg := newRig(t, &Options{AllowedOrigins: []string{"https://app.example.com:443", "http://other.example:80", "https://xn--bcher-kva.example"}})
	for _, origin := range []string{"https://app.example.com", "http://other.example", "https://xn--bcher-kva.example"} {
		if got := rg.post(t, viewer, call("1", "get_customer_record", ""), "Origin", origin); got.status != http.StatusOK || got.header.Get("Access-Control-Allow-Origin") != origin {
			t.Errorf("Origin %s: %d, ACAO %q; want 200 and the origin", origin, got.status, got.header.Get("Access-Control-Allow-Origin"))
		}
	}
	for _, origin := range []string{"http://app.example.com", "https://app.example.com:8443", "https://other.example"} {
		if got := rg.post(t, viewer, call("1", "get_customer_record", ""), "Origin", origin); got.status != http.StatusForbidden {
			t.Errorf("Origin %s: %d, want 403", origin, got.status)
		}
	}

	// The request's own origin, with Host "localhost:80" and the Origin a
	// browser sends for http://localhost.
	def := newRig(t, nil)
	send := func(host, origin string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, def.url+"/mcp", strings.NewReader(call("1", "get_customer_record", "")))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Origin", origin)
		req.Header.Set("Authorization", viewer)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := send("localhost:80", "http://localhost"); got != http.StatusOK {
		t.Errorf("Host localhost:80, Origin http://localhost: %d, want 200 (its own origin)", got)
	}
	if got := send("localhost:443", "http://localhost"); got != http.StatusForbidden {
		t.Errorf("Host localhost:443, Origin http://localhost: %d, want 403 (another port)", got)
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(def.url, "http://"))
	if got := send("localhost:"+port, "http://localhost"); got != http.StatusForbidden {
		t.Errorf("Host localhost:%s, Origin http://localhost: %d, want 403", port, got)
	}

	for _, bad := range []string{"https://bücher.example", "https://b%C3%BCcher.example", "https://app.example.com:", "https://app.example.com:0443", "https://app.example.com:65536"} {
		if _, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{AllowedOrigins: []string{bad}}); err == nil || !strings.Contains(err.Error(), "AllowedOrigins") {
			t.Errorf("AllowedOrigins %q: %v, want a refusal (browsers never send it)", bad, err)
		}
	}
}
