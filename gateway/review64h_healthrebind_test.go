package gateway

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestReview64hHealthRefusesRebinding: a page of evil.example whose name
// was rebound to 127.0.0.1 is same-origin with whatever answers on the
// gateway's port, so it reads every answer it gets there. The gateway
// refuses such a request on the MCP path (403), but its health path
// answers it, 200, with the downstream's URL: a page the operator opened
// learns where the (often unauthenticated) MCP server behind the gateway
// listens. A loopback Host still gets the health answer.
func TestReview64hHealthRefusesRebinding(t *testing.T) {
	rg := newRig(t, nil)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(rg.url, "http://"))
	get := func(host string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, rg.url+"/healthz", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := get("127.0.0.1:" + port); status != http.StatusOK {
		t.Fatalf("control: /healthz with a loopback Host: %d %s, want 200", status, body)
	}
	status, body := get("evil.example:" + port)
	if status != http.StatusForbidden || strings.Contains(body, rg.dsrv.URL) {
		t.Errorf("/healthz with rebound Host evil.example: %d %q; want 403 without the upstream's URL (as /mcp refuses it)", status, body)
	}
}
