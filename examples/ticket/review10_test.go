package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestRESTRefusesDNSRebinding: the REST endpoints, like the go-sdk's /mcp,
// refuse with 403 a request that came to the loopback server under another
// name (a web page of evil.example rebound to 127.0.0.1, holding a dev
// token), and serve the same request under a loopback name.
func TestRESTRefusesDNSRebinding(t *testing.T) {
	ta := newTestApp(t, nil)
	base := startHTTP(t, ta)
	send := func(host string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, base+"/tools/search_docs/call", strings.NewReader(`{"arguments": {"query": ""}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer token-alice")
		req.Header.Set("X-Session-Id", "rebind-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	port := base[strings.LastIndex(base, ":")+1:]
	if got := send("evil.example:" + port); got != http.StatusForbidden {
		t.Errorf("Host evil.example: status %d, want 403", got)
	}
	if got := send("localhost:" + port); got != http.StatusOK {
		t.Errorf("Host localhost: status %d, want 200", got)
	}
}
