package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReview21UpstreamAddressRefused: an --upstream whose host is empty
// or whose port no server can listen on (0, beyond 65535, or an empty
// port after the colon) was accepted: the gateway started and answered
// every call with 502. It is a mistake in the flags: exit status 2,
// naming --upstream, before the --audit file is opened.
func TestReview21UpstreamAddressRefused(t *testing.T) {
	for _, tc := range []struct{ name, upstream, want string }{
		{"empty_host", "http://:8081/mcp", "no host"},
		{"port_zero", "http://127.0.0.1:0/mcp", "port 0"},
		{"port_out_of_range", "http://127.0.0.1:99999/mcp", "port 99999"},
		{"port_out_of_range_ipv6", "https://[::1]:65536/mcp", "port 65536"},
		{"port_empty", "http://127.0.0.1:/mcp", "empty port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
			logs, err := runAtStart(t, nil, "--port", "0", "--audit", auditPath, "--upstream", tc.upstream)
			if err == nil || !strings.Contains(err.Error(), "--upstream") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("--upstream %s: err %v, want one naming --upstream and %q; logs:\n%s", tc.upstream, err, tc.want, logs)
			}
			if got := exitCode(err); got != 2 {
				t.Errorf("--upstream %s: %v: exit status %d, want 2", tc.upstream, err, got)
			}
			if _, statErr := os.Stat(auditPath); statErr == nil {
				t.Errorf("--upstream %s: the audit file was created before the refusal", tc.upstream)
			}
		})
	}
	// The same for a --jwt-jwks URL, which was fetched and failed with
	// exit status 1.
	logs, err := runAtStart(t, nil, "--port", "0", "--jwt-jwks", "https://127.0.0.1:0/jwks.json", "--jwt-issuer", "https://idp.example", "--jwt-audience", "a")
	if err == nil || !strings.Contains(err.Error(), "--jwt-jwks") || !strings.Contains(err.Error(), "port 0") || exitCode(err) != 2 {
		t.Errorf("--jwt-jwks on port 0: err %v (exit status %d), want one naming --jwt-jwks and port 0, exit status 2; logs:\n%s", err, exitCode(err), logs)
	}
}

// TestReview21UpstreamInvalidShown: an --upstream that does not parse as a
// URL was shown as "(an invalid URL)", so an operator could not see what
// was wrong with it (a scheme left out, a stray space from a template).
// Such a value is now shown quoted, unless it holds "@", "?" or "#", where
// a password or a secret query may be: then it is still not shown.
func TestReview21UpstreamInvalidShown(t *testing.T) {
	for _, tc := range []struct{ name, upstream, want, secret string }{
		{"no_scheme", "127.0.0.1:8081/mcp", `"127.0.0.1:8081/mcp"`, ""},
		{"leading_space", " http://127.0.0.1:8081/mcp", `" http://127.0.0.1:8081/mcp"`, ""},
		{"control_character", "http://127.0.0.1:8081/mcp\n", `"http://127.0.0.1:8081/mcp\n"`, ""},
		{"password_in_invalid", "http://alice:s3cret@[::1/mcp", "(an invalid URL", "s3cret"},
		{"query_in_invalid", "127.0.0.1:8081/mcp?key=s3cret", "(an invalid URL", "s3cret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs, err := runAtStart(t, nil, "--port", "0", "--upstream", tc.upstream)
			if err == nil || !strings.Contains(err.Error(), "--upstream") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("--upstream %q: err %v, want one naming --upstream and showing %s; logs:\n%s", tc.upstream, err, tc.want, logs)
			}
			if exitCode(err) != 2 {
				t.Errorf("--upstream %q: exit status %d, want 2", tc.upstream, exitCode(err))
			}
			if tc.secret != "" && strings.Contains(err.Error()+logs, tc.secret) {
				t.Errorf("--upstream %q: the error or logs show the secret: %v\n%s", tc.upstream, err, logs)
			}
		})
	}
}
