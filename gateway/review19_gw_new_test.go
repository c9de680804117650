package gateway

import (
	"strings"
	"testing"
)

// TestNewRefusesUpstreamUserInfo: the gateway sends no credentials from the
// upstream URL (neither its own client nor a Transport called directly
// adds them), so a downstream expecting them would refuse every call:
// New refuses such a URL, and its error does not show the password (nor
// the query, which may hold a key).
func TestNewRefusesUpstreamUserInfo(t *testing.T) {
	for _, up := range []string{"http://user:s3cret@127.0.0.1:9/mcp?key=k3y", "https://T0KEN@example.com/mcp"} {
		_, err := New(up, DemoTokens(), nil)
		if err == nil {
			t.Errorf("New(%q) = nil error, want a refusal of the user information", up)
			continue
		}
		for _, secret := range []string{"s3cret", "k3y", "T0KEN"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("New(%q) error %q shows %q", up, err, secret)
			}
		}
	}
}

// TestNewBadUpstreamHidesSecrets: the error for an upstream New cannot use
// does not quote its user information or query.
func TestNewBadUpstreamHidesSecrets(t *testing.T) {
	for _, up := range []string{"ftp://user:s3cret@host/mcp", "http://user:s3cret@/mcp?key=k3y", "//user:s3cret@host/mcp", "http://user:s3cret@host:bad/mcp"} {
		_, err := New(up, DemoTokens(), nil)
		if err == nil {
			t.Errorf("New(%q) = nil error", up)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "k3y") {
			t.Errorf("New(%q) error %q shows a secret", up, err)
		}
	}
}

// TestNewRefusesPathEqualToHealthPath: with Path equal to HealthPath every
// request to it was answered as the health check (MCP POSTs 405).
func TestNewRefusesPathEqualToHealthPath(t *testing.T) {
	if _, err := New("http://127.0.0.1:9/mcp", DemoTokens(), &Options{Path: "/healthz"}); err == nil {
		t.Error(`New with Path "/healthz" (the default HealthPath) = nil error`)
	}
	if _, err := New("http://127.0.0.1:9/mcp", DemoTokens(), &Options{Path: "/x", HealthPath: "/x"}); err == nil {
		t.Error(`New with Path and HealthPath "/x" = nil error`)
	}
	if _, err := New("http://127.0.0.1:9/mcp", DemoTokens(), &Options{Path: "/x", HealthPath: "-"}); err != nil {
		t.Errorf(`New with HealthPath "-" (no health check): %v`, err)
	}
}
