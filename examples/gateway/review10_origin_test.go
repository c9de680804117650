package main

import (
	"flag"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestAllowedOriginsFlag: --allowed-origins lets the listed origins'
// pages call the gateway and no other (403, not forwarded); a value that
// is not an origin stops the start.
func TestAllowedOriginsFlag(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	var forwarded int
	down := newRecorder(t)
	url, runErr, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp",
		"--allowed-origins", "https://app.example.com, http://localhost:6274")
	if url == "" {
		t.Fatalf("gateway did not start: %v; logs:\n%s", runErr, logs)
	}
	defer stop()
	for _, tc := range []struct {
		origin string
		status int
	}{
		{"https://app.example.com", http.StatusOK},
		{"http://localhost:6274", http.StatusOK},
		{"https://evil.example", http.StatusForbidden},
	} {
		req, err := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","arguments":{}}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer viewer-token")
		req.Header.Set("Origin", tc.origin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if tc.status == http.StatusOK {
			forwarded++
		}
		if resp.StatusCode != tc.status || down.len() != forwarded {
			t.Errorf("Origin %s: status %d, forwarded %d; want %d and %d", tc.origin, resp.StatusCode, down.len(), tc.status, forwarded)
		}
	}

	if url, err, stop, _ := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp",
		"--allowed-origins", "app.example.com"); url != "" {
		stop()
		t.Error("--allowed-origins app.example.com (not an origin): the gateway started")
	} else if err == nil || !strings.Contains(err.Error(), "AllowedOrigins") {
		t.Errorf("--allowed-origins app.example.com: err %v", err)
	}
}

// TestDemoTokensOnlyOnLoopback: the built-in demo tokens are public, so
// the binary refuses to serve them on an address others can reach (a
// rebound page or anyone on the network would be admin); with
// MCP_GATEWAY_TOKENS set it starts there.
func TestDemoTokensOnlyOnLoopback(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	url, err, stop, _ := startRun(t, "--host", "0.0.0.0", "--port", "0", "--upstream", "http://127.0.0.1:1/mcp")
	if url != "" {
		stop()
		t.Fatal("the gateway served the demo tokens on 0.0.0.0")
	}
	if err == nil || !strings.Contains(err.Error(), "demo tokens") {
		t.Errorf("err %v, want the demo tokens named", err)
	}
	if url, err, stop, _ := startRun(t, "--host", "localhost", "--port", "0", "--upstream", "http://127.0.0.1:1/mcp"); url == "" && err != nil {
		t.Errorf("--host localhost with the demo tokens: %v", err)
	} else if url != "" {
		stop()
	}
}
