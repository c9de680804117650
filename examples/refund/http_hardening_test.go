package main

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// doWithHost sends method to base+path with the Host header set to host.
func doWithHost(t *testing.T, method, base, path, host, body string) (int, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestReceivedRejectsForeignHost: as the go-sdk handler on /mcp does, GET
// and DELETE /_received refuse a loopback request whose Host is not a
// loopback name: a web page that rebinds its own name to 127.0.0.1 must not
// read the subjects, roles, request ids and tools that reached the server,
// nor wipe them.
func TestReceivedRejectsForeignHost(t *testing.T) {
	base := startHTTP(t)
	u, _ := url.Parse(base)
	evil := "rebind.attacker.example:" + u.Port()

	// Something worth stealing, as the gateway would forward it.
	post(t, base, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","arguments":{"customer_id":"CUST-00001"}}}`,
		map[string]string{headerSubject: "alice@example.com", headerRole: "support", headerRequestID: "req-secret"})

	if status, _ := doWithHost(t, http.MethodPost, base, "/mcp", evil, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); status != http.StatusForbidden {
		t.Fatalf("control: POST /mcp with Host %q = %d, want 403 (the SDK's rebinding check)", evil, status)
	}
	if status, body := doWithHost(t, http.MethodGet, base, "/_received", evil, ""); status != http.StatusForbidden {
		t.Errorf("GET /_received with Host %q = %d, want 403; body leaked:\n%s", evil, status, body)
	}
	if status, _ := doWithHost(t, http.MethodDelete, base, "/_received", evil, ""); status != http.StatusForbidden {
		t.Errorf("DELETE /_received with Host %q = %d, want 403", evil, status)
	}
}
