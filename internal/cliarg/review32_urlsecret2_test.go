package cliarg

import (
	"strings"
	"testing"
)

// TestReview32URLSecret2: a secret in a URL flag that URLMayHoldSecret
// missed (user:password after the scheme with the host left out, or after
// "http:/"; a token where the host or the port belongs, or after a space),
// and an ordinary value it hid (a host name with a 16-character run
// counting '-', a bare IPv6 address, host:*, a path in snake case).
func TestReview32URLSecret2(t *testing.T) {
	for _, tc := range []struct {
		v      string
		secret bool
	}{
		// A secret.
		{"https://admin:hunter2", true},
		{"http://admin:hunter2/mcp", true},
		{"https:/admin:hunter2", true},
		{"http:/admin:hunter2/mcp", true},
		{"https://sk_live_51HabcdEFGH0123456789", true},
		{"http://sk_live_51HabcdEFGH0123456789:8081/mcp", true},
		{"https://eyJhbGciOi.eyJzdWIi.sig", true},
		{"https://h.example:XyZ0aBcD1eFgH2iJ", true},
		{"https://h.example;XyZ0aBcD1eFgH2iJ", true},
		{"https://a.example sk_live_51HabcdEFGH0123456789", true},
		{"https://h.example/hooks/sk_live_51HabcdEFGH0123456789", true},
		{"5f0c1e2a-9b7d-4c3e-8a1f-2b3c4d5e6f70", true}, // a bare UUID
		// No secret.
		{"my-service-01234.svc.cluster.local:8080/mcp", false},
		{"http://my-service-01234.svc.cluster.local:8080/mcp", false},
		{"http://mcp-server-01234567:8080/mcp", false},
		{"http://my-svc-01234.ns.svc.cluster.local:8080/v1/mcp-server-prod2", false},
		{"https://0123456789abcdef0123456789abcdef.lambda-url.us-east-1.on.aws/", false},
		{"http://127.0.0.1:8081/mcp_server_v2_production", false},
		{"https://idp.example/oauth2/introspect", false},
		{"https://idp.example/.well-known/jwks.json", false},
		{"http://[2001:db8::1]:8080/mcp", false},
		{"http://localhost:*", false},
		{"localhost:*", false},
		{"::1", false},
		{"2001:db8::1", false},
		{"fe80::1%eth0", false},
		{"[fe80::1%eth0]:8080", false},
		{"http:/127.0.0.1:8081/mcp", false},
	} {
		if got := URLMayHoldSecret(tc.v); got != tc.secret {
			t.Errorf("URLMayHoldSecret(%q) = %v, want %v", tc.v, got, tc.secret)
		}
		if got := ShownURL(tc.v); tc.secret && got != hidden || !tc.secret && got != `"`+tc.v+`"` {
			t.Errorf("ShownURL(%q) = %s", tc.v, got)
		}
	}
}

// FuzzURLSecret: a token (a JWT, or a key-like run even without '-' and
// '_') typed into a URL flag, bare, in a URL's path, where its host
// belongs, or as an entry of a list, is never shown.
func FuzzURLSecret(f *testing.F) {
	for _, v := range []string{"sk_live_51HabcdEFGH0123456789", "eyJhbGciOiJIUzI1NiJ9.e30.x", "admin:XyZ0aBcD1eFgH2iJ", "a b/XyZ0aBcD1eFgH2iJ", "00000000A00000+0"} {
		for form := range 5 {
			f.Add(v, form)
		}
	}
	f.Fuzz(func(t *testing.T, v string, form int) {
		if strings.Contains(v, "://") || !strings.Contains(v, "eyJ") && !keyRunOf(v, false) {
			return
		}
		var s string
		switch uint(form) % 5 {
		case 0:
			s = v
		case 1:
			s = "https://h.example/" + v
		case 2:
			s = "https://h.example:8443/hooks/" + v + "/mcp"
		case 3:
			if strings.ContainsAny(v, ".[") {
				return // a host name with a dot, or an IPv6 address: shown
			}
			s = "https://" + v + "/mcp"
		case 4:
			s = "https://a.example, " + v
		}
		if !URLMayHoldSecret(s) || strings.Contains(ShownURL(s), v) {
			t.Fatalf("URLMayHoldSecret(%q) = %v, ShownURL = %s", s, URLMayHoldSecret(s), ShownURL(s))
		}
	})
}
