package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The twenty-third review's third round on the day's fixes.

// TestReview23hDefaultOriginOfAZonedHost: the default Origin is the
// gateway's "as a browser sends it", that a CSRF check comparing it with
// the gateway's own origin (the fake gateway's: "http://"+Host) accepts.
// Go's HTTP client sends an IPv6 literal's Host without its zone
// (--gateway http://[fe80::1%25eth0]:PORT is Host [fe80::1]:PORT), and a
// browser sends no zone either; the default Origin kept it
// ("http://[fe80::1%eth0]:PORT", not even a URL), so every write of a
// gateway on a link-local address was refused as cross-site. The
// gateway here listens on 127.0.0.1; the client dials it for the zoned
// address.
func TestReview23hDefaultOriginOfAZonedHost(t *testing.T) {
	ts := httptest.NewServer(newFakeGateway())
	defer ts.Close()
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	c, err := newGatewayClient("http://[fe80::1%25eth0]:"+port, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "http://[fe80::1]:" + port; c.origin != want {
		t.Errorf("default Origin %q, want %q", c.origin, want)
	}
	tr := c.hc.Transport.(*http.Transport)
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, ts.Listener.Addr().String())
	}
	defer tr.CloseIdleConnections()
	resp, err := c.do(t.Context(), sessionCustomer, gatewayRequest{method: "POST", path: "/api/cart",
		body: map[string]any{"sku": "RB-100", "quantity": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.status != http.StatusOK {
		t.Errorf("a cart update: %d %s; want 200, the Origin accepted", resp.status, resp.body)
	}
	for _, tc := range []struct{ gateway, want string }{
		{"https://[fe80::1%25Eth0]:443/gw", "https://[fe80::1]"},
		{"http://[FE80::1%25lo]", "http://[fe80::1]"},
		{"http://[::1]:8080", "http://[::1]:8080"},
	} {
		if c, err := newGatewayClient(tc.gateway, ""); err != nil {
			t.Errorf("--gateway %s: %v", tc.gateway, err)
		} else if c.origin != tc.want {
			t.Errorf("--gateway %s: origin %q, want %q", tc.gateway, c.origin, tc.want)
		}
	}
}
