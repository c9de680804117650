package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReview64hFakeGatewayRefusesRebinding: `shop fake-gateway` listens on
// 127.0.0.1:4110 and prints its sessions, which are constants of the
// source (the super admin's is sess-super-linus). A page of evil.example
// whose name was rebound to 127.0.0.1 is same-origin with the port: it
// sets the rs_auth cookie on its own name, and its requests carry Host
// and Origin evil.example:port, which the fake gateway's Origin check
// takes for its own. It must be refused as the other loopback servers of
// the examples refuse it (403, the DNS rebinding check), before anything
// is read or changed; a loopback Host is served.
func TestReview64hFakeGatewayRefusesRebinding(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- runFakeGateway(ctx, []string{"--port", port}, io.Discard) }()
	t.Cleanup(func() { cancel(); <-done })

	send := func(method, path, host string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://127.0.0.1:"+port+path, strings.NewReader(""))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Cookie", "rs_auth="+sessionSuper)
		if method != http.MethodGet {
			req.Header.Set("Origin", "http://"+host)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if status, _ := send(http.MethodGet, "/api/auth/me", "127.0.0.1:"+port); status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fake gateway did not start")
		}
	}
	evil := "evil.example:" + port
	if status, body := send(http.MethodGet, "/api/admin/users", evil); status != http.StatusForbidden {
		t.Errorf("GET /api/admin/users with rebound Host %s: %d, want 403; the page reads:\n%s", evil, status, body)
	}
	if status, body := send(http.MethodPost, "/api/admin/users/u-1001/disable", evil); status != http.StatusForbidden {
		t.Errorf("POST .../u-1001/disable with rebound Host and Origin %s: %d, want 403: %s", evil, status, body)
	}
	if status, body := send(http.MethodGet, "/api/auth/me", "127.0.0.1:"+port); status != http.StatusOK {
		t.Errorf("after the rebound requests, the super admin's own request: %d %s, want 200", status, body)
	}
}
