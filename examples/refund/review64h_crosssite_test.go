package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestReview64hCrossSitePostNotReceived: any web page the operator opens
// can POST to 127.0.0.1:8081/mcp without a CORS preflight (a form, or
// fetch with mode no-cors: Content-Type text/plain, Origin its own). The
// server refuses such a body (415: the go-sdk reads only application/json)
// and runs nothing, but /_received, which the demo reads to show what the
// gateway let through ("the downstream never sees it"), listed it as the
// tools/call it spelt: a page could plant admin_reset_key calls that never
// ran. The README: /_received lists requests "read as the server reads
// them", a body the server refuses being "(unparseable)".
func TestReview64hCrossSitePostNotReceived(t *testing.T) {
	base := startHTTP(t)
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
		req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"admin_reset_key","arguments":{"key_id":"KEY-PRIMARY"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Origin", "https://evil.example")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode < 400 {
			t.Fatalf("control: a %s POST from another origin: %d %s, want a refusal", ct, res.StatusCode, b)
		}
	}
	for _, e := range received(t, base) {
		if e.Tool == "admin_reset_key" {
			t.Errorf("/_received lists a call the server refused unread (a web page's cross-site POST): %+v", e)
		}
	}
}
