package main

import (
	"strings"
	"testing"
)

// TestReview19PlainUpstreamOffLoopbackWarned: an --upstream that is plain
// http to a host other than loopback is allowed (a private network may be
// trusted) but warned about at start: the identity headers the downstream
// trusts cross the network unencrypted. Loopback and https are not.
func TestReview19PlainUpstreamOffLoopbackWarned(t *testing.T) {
	answeringDownstream(t) // saves the flags and arguments
	for _, tc := range []struct {
		name     string
		upstream string
		warned   bool
	}{
		{"http_off_loopback", "http://192.0.2.1:8081/mcp", true},
		{"http_name_off_loopback", "http://mcp.internal.example/mcp", true},
		{"http_loopback", "http://127.0.0.1:8081/mcp", false},
		{"http_localhost", "http://localhost:8081/mcp", false},
		{"http_ipv6_loopback", "http://[::1]:8081/mcp", false},
		{"https_off_loopback", "https://192.0.2.1/mcp", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, err, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", tc.upstream)
			if url == "" {
				t.Fatalf("gateway did not start: %v\n%s", err, logs)
			}
			stop()
			if got := strings.Contains(logs.String(), "plain http"); got != tc.warned {
				t.Errorf("--upstream %s: warned %v, want %v; logs:\n%s", tc.upstream, got, tc.warned, logs)
			}
		})
	}
}
