package cliarg

import (
	"strings"
	"testing"
)

// TestReview31Small2SecretsWithoutAHint: a secret given bare, whose form and
// not its name gives it away, was shown whole: a JWT (the gateway's callers
// hold one), a hex key (TICKET_MCP_AUDIT_KEY's, SHOP_MCP_CONFIRM_KEY's
// value without its name), a bearer token with its scheme, user:password
// without a host, a session id; and a value of any length was printed
// whole into one error line.
func TestReview31Small2SecretsWithoutAHint(t *testing.T) {
	for _, v := range []string{
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlc2ln",
		"0123456789abcdef0123456789abcdef",
		"00112233445566778899AABBCCDDEEFF",
		"c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0",
		"Bearer abc",
		"alice:s3cretpw",
		"550e8400-e29b-41d4-a716-446655440000",
		strings.Repeat("x", 200),
	} {
		if got := Shown(v); strings.Contains(got, v) {
			t.Errorf("Shown(%.40q...) = %.60s: shown", v, got)
		}
	}
	// Still shown: what a mistyped command or a forgotten flag's plain value
	// looks like.
	for _, v := range []string{"serve-htpp", "now", "--rate", "127.0.0.1:8000", "[::1]:8000", "localhost:", "./server.yaml", "/etc/ticket/server.yaml", "8000", "ticket-audit"} {
		if got := Shown(v); !strings.Contains(got, v) {
			t.Errorf("Shown(%q) = %s: not shown", v, got)
		}
	}
}
