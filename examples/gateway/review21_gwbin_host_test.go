package main

import (
	"strings"
	"testing"
)

// TestReview21HostRefused: a --host that is not a host name or an IP
// address (a port in it, an IPv6 address in brackets, a URL, a stray
// space) passed the loopback check, which reads host:port and brackets,
// and then failed at the listen with exit status 1 and a resolver's error
// ("lookup 127.0.0.1:9000: no such host", "address [[::1]]:0: missing
// port in address"). It is a mistake in the flags: exit status 2, with a
// message saying what --host wants.
func TestReview21HostRefused(t *testing.T) {
	tokens := map[string]*string{"MCP_GATEWAY_TOKENS": ptr(`{"tok-abcdefgh":"admin"}`)}
	for _, tc := range []struct{ name, host, want string }{
		{"port_in_host", "127.0.0.1:9000", "without a port"},
		{"ipv6_brackets", "[::1]", "without brackets"},
		{"url", "http://127.0.0.1", "without a port"},
		{"leading_space", " 127.0.0.1", "host name or IP address"},
		{"path", "localhost/x", "host name or IP address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, env := range []map[string]*string{nil, tokens} {
				logs, err := runAtStart(t, env, "--port", "0", "--upstream", "http://127.0.0.1:1/mcp", "--host", tc.host)
				if err == nil || !strings.Contains(err.Error(), "--host") || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("--host %q: err %v, want one naming --host and saying %q; logs:\n%s", tc.host, err, tc.want, logs)
				}
				if got := exitCode(err); got != 2 {
					t.Errorf("--host %q: %v: exit status %d, want 2", tc.host, err, got)
				}
			}
		})
	}
	// Host names and addresses still start.
	down := answeringDownstream(t)
	for _, host := range []string{"localhost", "127.0.0.1", "LOCALHOST"} {
		url, err, stop, logs := startRun(t, "--host", host, "--port", "0", "--upstream", down.URL+"/mcp")
		if url == "" {
			t.Errorf("--host %s: did not start: %v\n%s", host, err, logs)
			continue
		}
		stop()
	}
}
