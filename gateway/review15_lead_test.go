package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// TestRedirectNeverRelayed: a downstream's redirect is not relayed, with or
// without pins or filtering: the client would follow it to a server the
// gateway does not see (a Python server redirecting /mcp to /mcp/ names
// its own address), and send its calls there unjudged.
func TestRedirectNeverRelayed(t *testing.T) {
	var target string
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusTemporaryRedirect)
	}))
	target = down.URL + "/mcp/"
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	for _, tc := range []struct{ method, body string }{
		{http.MethodPost, call(`1`, "get_customer_record", `{}`)},
		{http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}`},
		{http.MethodGet, ""},
		{http.MethodDelete, ""},
	} {
		req, _ := http.NewRequest(tc.method, gw.URL+"/mcp", strings.NewReader(tc.body))
		req.Header.Set("Authorization", admin)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", "s-1")
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 && resp.StatusCode <= 399 || resp.Header.Get("Location") != "" {
			t.Errorf("%s: relayed %d Location %q", tc.method, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
}

// TestUnderscoreHeadersNotForwarded: a client header whose name has an
// underscore is not forwarded (nginx's default, underscores_in_headers
// off): CGI and WSGI servers read Content_Encoding as Content-Encoding,
// which the gateway checked under its real name only. An underscore first
// in the name counts too.
func TestUnderscoreHeadersNotForwarded(t *testing.T) {
	rg := newRig(t, nil)
	if r := rg.post(t, viewer, call(`1`, "get_customer_record", `{}`), "Content_Encoding", "gzip", "X_Trace", "a", "X-Trace", "b", "_Lead", "c"); r.status != 200 {
		t.Fatalf("status %d %s", r.status, r.body)
	}
	log := rg.down.log()
	if len(log) != 1 {
		t.Fatalf("%d requests downstream", len(log))
	}
	h := log[0].Header
	for k := range h {
		if strings.Contains(k, "_") {
			t.Errorf("forwarded %s: %v", k, h[k])
		}
	}
	if h.Get("X-Trace") != "b" {
		t.Errorf("X-Trace %q, want b", h.Get("X-Trace"))
	}
}

// TestUnsupportedEncodingNamesIdentity: a body refused for its
// Content-Encoding is answered with Accept-Encoding: identity, which tells
// the client what the gateway takes (RFC 9110 section 12.5.3).
func TestUnsupportedEncodingNamesIdentity(t *testing.T) {
	rg := newRig(t, nil)
	r := rg.post(t, viewer, call(`1`, "get_customer_record", `{}`), "Content-Encoding", "gzip")
	if r.status != http.StatusUnsupportedMediaType || r.header.Get("Accept-Encoding") != "identity" {
		t.Errorf("status %d, Accept-Encoding %q; want 415 and identity", r.status, r.header.Get("Accept-Encoding"))
	}
	if len(rg.down.log()) != 0 {
		t.Error("the encoded body reached the downstream")
	}
}
