package gateway

import (
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestDNSRebindingRefused: a gateway on a loopback address refuses, with
// -32001 and 403 and before it reads the token, a request whose Host names
// something else: a page of evil.example whose name was rebound to
// 127.0.0.1 sends Host evil.example:port and could use a token it knows
// (the demo tokens). Loopback names pass; DisableLocalhostProtection turns
// the check off. Nothing refused reaches the downstream, on POST, GET and
// DELETE alike.
func TestDNSRebindingRefused(t *testing.T) {
	rg := newRig(t, nil)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(rg.url, "http://"))
	send := func(t *testing.T, rg *rig, method, host, auth string) reply {
		t.Helper()
		var body *strings.Reader
		if method == http.MethodPost {
			body = strings.NewReader(call("1", "admin_reset_key", ""))
		} else {
			body = strings.NewReader("")
		}
		req, err := http.NewRequest(method, rg.url+"/mcp", body)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return reply{status: resp.StatusCode, header: resp.Header}
	}
	for _, tc := range []struct {
		host   string
		status int
	}{
		{"evil.example:" + port, http.StatusForbidden},
		{"evil.example", http.StatusForbidden},
		{"127.0.0.1.nip.io:" + port, http.StatusForbidden},
		{"localhost:" + port, http.StatusOK},
		{"LOCALHOST:" + port, http.StatusOK},
		{"127.0.0.1:" + port, http.StatusOK},
		{"127.1.2.3:" + port, http.StatusOK},
		{"[::1]:" + port, http.StatusOK},
	} {
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			before := len(rg.down.log())
			got := send(t, rg, method, tc.host, admin)
			if got.status != tc.status {
				t.Errorf("%s with Host %q: status %d, want %d", method, tc.host, got.status, tc.status)
			}
			if forwarded := len(rg.down.log()) > before; forwarded != (tc.status == http.StatusOK) {
				t.Errorf("%s with Host %q: forwarded %v", method, tc.host, forwarded)
			}
		}
	}
	// Refused before the token is read: no token, still 403, not 401.
	if got := send(t, rg, http.MethodPost, "evil.example:"+port, ""); got.status != http.StatusForbidden || got.header.Get("WWW-Authenticate") != "" {
		t.Errorf("rebound request without a token: %d, WWW-Authenticate %q; want 403 and no challenge", got.status, got.header.Get("WWW-Authenticate"))
	}
	if !strings.Contains(rg.logs.String(), "DNS rebinding") {
		t.Errorf("no deny line naming DNS rebinding in the logs:\n%s", rg.logs)
	}

	off := newRig(t, &Options{DisableLocalhostProtection: true})
	if got := send(t, off, http.MethodPost, "evil.example", admin); got.status != http.StatusOK || len(off.down.log()) != 1 {
		t.Errorf("DisableLocalhostProtection: status %d, forwarded %d; want 200 and 1", got.status, len(off.down.log()))
	}
}

// TestOriginChecked: a request to the MCP path with an Origin header that
// is neither the request's own nor in AllowedOrigins is refused with
// -32001 and 403 before its token is read and never forwarded; requests
// without Origin, with their own, or with a listed one (any case) pass;
// "*" lets any through; two Origin headers and "null" are refused.
func TestOriginChecked(t *testing.T) {
	post := func(t *testing.T, rg *rig, auth string, origins ...string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, rg.url+"/mcp", strings.NewReader(call("1", "get_customer_record", "")))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		for _, o := range origins {
			req.Header.Add("Origin", o)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	rg := newRig(t, &Options{AllowedOrigins: []string{"https://app.example.com", "http://localhost:6274"}})
	for _, tc := range []struct {
		name    string
		origins []string
		status  int
	}{
		{"none", nil, http.StatusOK},
		{"own", []string{rg.url}, http.StatusOK},
		{"listed", []string{"https://app.example.com"}, http.StatusOK},
		{"listed_other_case", []string{"HTTPS://App.Example.com"}, http.StatusOK},
		{"listed_port", []string{"http://localhost:6274"}, http.StatusOK},
		{"other_port", []string{"http://localhost:6275"}, http.StatusForbidden},
		{"other_scheme", []string{"http://app.example.com"}, http.StatusForbidden},
		{"evil", []string{"https://evil.example"}, http.StatusForbidden},
		{"null", []string{"null"}, http.StatusForbidden},
		{"empty", []string{""}, http.StatusForbidden},
		{"two", []string{"https://app.example.com", "https://app.example.com"}, http.StatusForbidden},
	} {
		before := len(rg.down.log())
		if got := post(t, rg, viewer, tc.origins...); got != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.status)
		}
		if forwarded := len(rg.down.log()) > before; forwarded != (tc.status == http.StatusOK) {
			t.Errorf("%s: forwarded %v", tc.name, forwarded)
		}
	}
	if got := post(t, rg, "", "https://evil.example"); got != http.StatusForbidden {
		t.Errorf("foreign Origin without a token: %d, want 403 (checked before the token)", got)
	}

	def := newRig(t, nil)
	if got := post(t, def, viewer, def.url); got != http.StatusOK {
		t.Errorf("default, own origin: %d", got)
	}
	if got := post(t, def, viewer, "http://localhost:6274"); got != http.StatusForbidden {
		t.Errorf("default, another origin: %d, want 403", got)
	}
	anyOrigin := newRig(t, &Options{AllowedOrigins: []string{"*"}})
	if got := post(t, anyOrigin, viewer, "https://evil.example"); got != http.StatusOK {
		t.Errorf(`"*": %d, want 200`, got)
	}
}

// TestAllowedOriginsRefused: New refuses an AllowedOrigins entry that is
// not an origin.
func TestAllowedOriginsRefused(t *testing.T) {
	for _, bad := range []string{"", "app.example.com", "https://app.example.com/", "https://app.example.com/x",
		"https://u@app.example.com", "ftp://app.example.com", "https://app.example.com?x", "https://app.example.com#x", "https://", "null"} {
		if _, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{AllowedOrigins: []string{bad}}); err == nil || !strings.Contains(err.Error(), "AllowedOrigins") {
			t.Errorf("AllowedOrigins %q: %v, want a refusal", bad, err)
		}
	}
	if _, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{AllowedOrigins: []string{"*", "https://a.example:8443"}}); err != nil {
		t.Errorf("good origins refused: %v", err)
	}
}

// TestCORSForAllowedOrigins: a page of a listed origin can use the gateway
// from a browser: its preflight is answered (204, no token, not
// forwarded) with the methods and headers an MCP client sends, cacheable
// for 600 s and varying by Origin (a cache must not hand it to another
// origin's page); every
// answer to it, a 401 and an event stream included (still streamed),
// names the origin, replacing the downstream's own CORS headers, and
// exposes Mcp-Session-Id and WWW-Authenticate; no credentials mode. An
// unlisted origin's preflight is 403; requests without Origin or from the
// gateway's own origin get no CORS headers.
func TestCORSForAllowedOrigins(t *testing.T) {
	const app = "https://app.example.com"
	rg := newRig(t, &Options{AllowedOrigins: []string{app}})
	do := func(t *testing.T, method, origin, auth, body string, hdr ...string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, rg.url+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}

	pre := do(t, http.MethodOptions, app, "", "", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type, mcp-session-id")
	h := pre.Header
	if pre.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != app ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Mcp-Session-Id") ||
		h.Get("Access-Control-Allow-Credentials") != "" ||
		h.Get("Access-Control-Max-Age") != "600" || !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
		t.Errorf("preflight: %d %v", pre.StatusCode, h)
	}
	if n := len(rg.down.log()); n != 0 {
		t.Errorf("the preflight was forwarded (%d requests)", n)
	}
	if r := do(t, http.MethodOptions, "https://evil.example", "", "", "Access-Control-Request-Method", "POST"); r.StatusCode != http.StatusForbidden || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("unlisted origin's preflight: %d, ACAO %q", r.StatusCode, r.Header.Get("Access-Control-Allow-Origin"))
	}
	if r := do(t, http.MethodOptions, "", "", ""); r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("OPTIONS without Origin: %d, want 405 as before", r.StatusCode)
	}

	checkCORS := func(t *testing.T, what string, r *http.Response) {
		t.Helper()
		if got := r.Header.Values("Access-Control-Allow-Origin"); len(got) != 1 || got[0] != app {
			t.Errorf("%s: Access-Control-Allow-Origin %q, want [%s]", what, got, app)
		}
		if !strings.Contains(r.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") ||
			!strings.Contains(r.Header.Get("Access-Control-Expose-Headers"), "WWW-Authenticate") ||
			!strings.Contains(strings.Join(r.Header.Values("Vary"), ","), "Origin") {
			t.Errorf("%s: CORS headers %v", what, r.Header)
		}
	}
	ok := do(t, http.MethodPost, app, viewer, call("1", "get_customer_record", ""))
	if ok.StatusCode != http.StatusOK || ok.Header.Get("Mcp-Session-Id") != "sess-1" {
		t.Errorf("allowed origin's call: %d, session %q", ok.StatusCode, ok.Header.Get("Mcp-Session-Id"))
	}
	checkCORS(t, "200", ok)
	unauth := do(t, http.MethodPost, app, "", call("1", "get_customer_record", ""))
	if unauth.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d", unauth.StatusCode)
	}
	checkCORS(t, "401", unauth)

	// An event stream through the CORS writer is still streamed: the
	// first event arrives while the downstream is blocked.
	rg.down.release = make(chan struct{})
	sse := do(t, http.MethodPost, app, viewer, call("5", "stream", ""))
	checkCORS(t, "event stream", sse)
	var seen int
	if err := readEvents(sse.Body, func(ev *event) {
		seen++
		if strings.Contains(string(ev.data), "notifications/progress") {
			close(rg.down.release)
		}
	}); err != nil || seen != 2 {
		t.Errorf("event stream: %d events, %v", seen, err)
	}

	for _, origin := range []string{"", rg.url} {
		if r := do(t, http.MethodPost, origin, viewer, call("1", "get_customer_record", "")); r.StatusCode != http.StatusOK || r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("Origin %q: %d, ACAO %q; want 200 and none", origin, r.StatusCode, r.Header.Get("Access-Control-Allow-Origin"))
		}
	}
}

// TestCORSReplacesDownstreams: the downstream's own CORS headers never
// reach a page: the gateway decides which origins may call it.
func TestCORSReplacesDownstreams(t *testing.T) {
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Allow-Credentials", "true")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	}))
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), AllowedOrigins: []string{"https://app.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	for _, origin := range []string{"https://app.example.com", ""} {
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(call("1", "get_customer_record", "")))
		req.Header.Set("Authorization", viewer)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if origin != "" && (resp.Header.Get("Access-Control-Allow-Origin") != origin || resp.Header.Get("Access-Control-Allow-Credentials") != "") {
			t.Errorf("allowed origin: ACAO %q, credentials %q; want the origin and none", resp.Header.Get("Access-Control-Allow-Origin"), resp.Header.Get("Access-Control-Allow-Credentials"))
		}
		if origin == "" && resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("no Origin: the downstream's headers are relayed as before, got ACAO %q", resp.Header.Get("Access-Control-Allow-Origin"))
		}
	}
}
