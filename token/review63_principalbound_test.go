package token_test

import (
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
)

// TestReview63CheckPrincipalBounds: CheckPrincipal said a principal it
// passes travels in identity headers and is read back as the same, but
// mcpguard.FromGatewayHeaders refused a value over 256 bytes (63f: 24 roles
// of 21 bytes). Both now hold the same bounds: a subject of 1024 bytes,
// roles of 16 KiB joined with commas; one byte more is refused here, at
// the gateway, rather than by every downstream call.
func TestReview63CheckPrincipalBounds(t *testing.T) {
	roles := func(n int) []string { // n bytes joined with commas
		var rs []string
		for left := n; left > 0; left -= 21 {
			rs = append(rs, strings.Repeat("r", min(left, 20)))
		}
		if got := len(strings.Join(rs, ",")); got != n {
			t.Fatalf("roles of %d bytes joined, want %d", got, n)
		}
		return rs
	}
	for _, tc := range []struct {
		name string
		pr   policy.Principal
		ok   bool
	}{
		{"subject_at_bound", policy.Principal{Subject: strings.Repeat("s", token.MaxSubjectBytes)}, true},
		{"subject_over", policy.Principal{Subject: strings.Repeat("s", token.MaxSubjectBytes+1)}, false},
		{"roles_at_bound", policy.Principal{Subject: "ann", Roles: roles(token.MaxRoleHeaderBytes)}, true},
		{"roles_over", policy.Principal{Subject: "ann", Roles: roles(token.MaxRoleHeaderBytes + 1)}, false},
		{"24_roles_of_21", policy.Principal{Subject: "ann", Roles: roles(24*22 - 1)}, true},
	} {
		err := token.CheckPrincipal(&tc.pr)
		if (err == nil) != tc.ok {
			t.Errorf("%s (roles %d bytes joined): %v, want ok %v", tc.name, len(strings.Join(tc.pr.Roles, ",")), err, tc.ok)
		}
	}
}
