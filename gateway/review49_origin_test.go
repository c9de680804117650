package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestReview49OwnOriginIsAWebOrigin checks what counts as a request's own
// origin (allowed without AllowedOrigins, no CORS): an http or https
// origin, nothing after its host, naming the request's Host. An Origin
// that names the same host otherwise (another scheme, a path, no scheme)
// or cannot be read is refused with 403 and never forwarded.
func TestReview49OwnOriginIsAWebOrigin(t *testing.T) {
	var sent atomic.Int64
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent.Add(1)
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{}}`))}, nil
	})
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Transport: rt, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	// httptest.NewRequest's Host is example.com.
	for _, tc := range []struct {
		origin string
		want   int
	}{
		{"http://example.com", http.StatusOK},
		{"https://example.com", http.StatusOK},
		{"http://EXAMPLE.com:80", http.StatusOK},
		{"ftp://example.com", http.StatusForbidden},
		{"ws://example.com", http.StatusForbidden},
		{"http://example.com/", http.StatusForbidden},
		{"http://example.com/mcp", http.StatusForbidden},
		{"example.com", http.StatusForbidden},
		{"//example.com", http.StatusForbidden},
		{"http://example.com:8080", http.StatusForbidden},
		{"http://%zz", http.StatusForbidden},
		{"http://example.com\x7f", http.StatusForbidden},
		{"null", http.StatusForbidden},
	} {
		before := sent.Load()
		w := serveOne(g, http.MethodPost, viewer, pingBody, "Origin", tc.origin)
		if w.Code != tc.want {
			t.Errorf("Origin %q on Host example.com: status %d, want %d (%s)", tc.origin, w.Code, tc.want, w.Body.String())
		}
		if forwarded := sent.Load() != before; forwarded != (tc.want == http.StatusOK) {
			t.Errorf("Origin %q: forwarded %v, want %v", tc.origin, forwarded, tc.want == http.StatusOK)
		}
		if acao := w.Header().Get("Access-Control-Allow-Origin"); acao != "" {
			t.Errorf("Origin %q: Access-Control-Allow-Origin %q, want none", tc.origin, acao)
		}
	}
}

// TestReview49AllowedOriginsEdges checks the edges of the AllowedOrigins
// entries New accepts: ports 1 and 65535, not 0 or 65536; a host of
// ASCII only, its first byte included.
func TestReview49AllowedOriginsEdges(t *testing.T) {
	for _, tc := range []struct {
		entry string
		ok    bool
	}{
		{"http://a.example:1", true},
		{"http://a.example:65535", true},
		{"http://a.example:0", false},
		{"http://a.example:65536", false},
		{"http://\x80a.example", false},
		{"http://a.example\x80", false},
	} {
		_, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{AllowedOrigins: []string{tc.entry}, Logger: discardLogger()})
		if (err == nil) != tc.ok {
			t.Errorf("AllowedOrigins %q: error %v, want accepted %v", tc.entry, err, tc.ok)
		}
	}
}

// TestReview49HeaderName checks isHeaderName, which decides the Mcp-Param-*
// names a preflight is allowed: an RFC 9110 token, every byte of it.
func TestReview49HeaderName(t *testing.T) {
	for _, s := range []string{"a", "z", "A", "Z", "0", "9", "!", "#", "$", "%", "&", "'", "*", "+", "-", ".", "^", "_", "`", "|", "~", "Mcp-Param-Region"} {
		if !isHeaderName(s) {
			t.Errorf("isHeaderName(%q) = false, want true", s)
		}
	}
	for _, s := range []string{"", " ", "@", "[", "{", "/", ":", "\"", "(", "a b", "\x7f", "\x80", "é", "@a", "a@", "Mcp-Param-a b", "Mcp-Param-[x]"} {
		if isHeaderName(s) {
			t.Errorf("isHeaderName(%q) = true, want false", s)
		}
	}
}

// TestReview49PreflightParamNames checks which Mcp-Param-* names a
// preflight of an allowed origin gets allowed: a prefix with a name after
// it, in any case, that is a header name; not the bare prefix.
func TestReview49PreflightParamNames(t *testing.T) {
	req := httptest.NewRequest(http.MethodOptions, "/mcp", nil)
	req.Header.Set("Access-Control-Request-Headers", "mcp-param-, MCP-PARAM-Region, mcp-param-a@b, mcp-param-x")
	w := httptest.NewRecorder()
	preflight(w, req, "https://app.example.com")
	got := w.Header().Get("Access-Control-Allow-Headers")
	want := corsAllowHeaders + ", MCP-PARAM-Region, mcp-param-x"
	if got != want {
		t.Errorf("Access-Control-Allow-Headers %q, want %q", got, want)
	}
}

// TestReview49CORSWriter checks the writer that names an allowed origin on
// its answer: set on the first Write as on WriteHeader (an answer whose
// handler never calls WriteHeader), in place of the downstream's CORS
// headers, once.
func TestReview49CORSWriter(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Set("Access-Control-Allow-Origin", "*")
	rec.Header().Set("Access-Control-Allow-Credentials", "true")
	w := &corsWriter{ResponseWriter: rec, origin: "https://app.example.com"}
	for range 3 {
		if _, err := w.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	h := rec.Result().Header
	if got := h.Get("Access-Control-Allow-Origin"); got != "https://app.example.com" {
		t.Errorf("Access-Control-Allow-Origin %q after a Write alone, want the origin", got)
	}
	if got := h.Get("Access-Control-Allow-Credentials"); got != "" {
		t.Errorf("the downstream's Access-Control-Allow-Credentials %q kept", got)
	}
	if got := rec.Header().Values("Vary"); len(got) != 1 || got[0] != "Origin" {
		t.Errorf("Vary %q after three writes, want Origin once", got)
	}
}
