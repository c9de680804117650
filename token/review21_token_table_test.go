package token_test

import (
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview21TableEmptyMembersRefused: an entry that writes "sub" or
// "role" but leaves it empty (or null), as a template with an unset
// variable would, is refused rather than read as absent: an empty "sub"
// became a subject derived from the token, an empty "role" no role, both
// silently.
func TestReview21TableEmptyMembersRefused(t *testing.T) {
	for _, tt := range []struct{ name, table, want string }{
		{"empty_sub", `{"tok-a":{"sub":"","role":"viewer"}}`, `"sub" is empty`},
		{"null_sub", `{"tok-a":{"sub":null,"role":"viewer"}}`, `"sub" is empty`},
		{"sub_not_string", `{"tok-a":{"sub":7,"role":"viewer"}}`, `"sub" must be a string`},
		{"empty_role", `{"tok-a":{"sub":"alice","role":""}}`, `"role" is empty`},
		{"null_role", `{"tok-a":{"sub":"alice","role":null}}`, `"role" is empty`},
		{"empty_role_with_roles", `{"tok-a":{"sub":"alice","role":"","roles":["admin"]}}`, `"role" is empty`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := token.Parse([]byte(tt.table))
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "tok-a") {
				t.Fatalf("Parse(%s) = %v, want an error containing %q that does not quote the token", tt.table, err, tt.want)
			}
		})
	}
	for _, ok := range []string{
		`{"tok-a":{"sub":"alice","role":"viewer"}}`,
		`{"tok-a":{"sub":"alice"}}`,
		`{"tok-a":{"role":"viewer"}}`,
		`{"tok-a":{"sub":"alice","roles":[]}}`,
		`{"tok-a":{"sub":"alice","roles":["a","b"],"role":"c"}}`,
	} {
		if _, err := token.Parse([]byte(ok)); err != nil {
			t.Errorf("Parse(%s) = %v, want a table", ok, err)
		}
	}
}
