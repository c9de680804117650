package gateway

import (
	"io"
	"net/http"
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
