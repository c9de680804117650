package token_test

import (
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview56TableErrorsNameTheMember: an entry with a misspelt member
// ("subject"), a list in "role" or a string in "roles" was refused with
// the same `value must be a role, a list of roles, or {...}`, which does
// not say what is wrong with it; policy.ParseConfig names the member.
func TestReview56TableErrorsNameTheMember(t *testing.T) {
	for _, c := range []struct{ table, want string }{
		{`{"tok-a":{"subject":"ann","role":"a"}}`, `entry 1: unknown member "subject"`},
		{`{"tok-a":{"sub":"ann","role":["a","b"]}}`, `entry 1: "role" must be a string (a list of roles goes in "roles")`},
		{`{"tok-a":{"sub":"ann","roles":"a"}}`, `entry 1: "roles" must be a list of strings`},
		{`{"tok-a":7}`, `entry 1: value must be a role, a list of roles, or {"sub", "role" | "roles"}`},
	} {
		_, err := token.Parse([]byte(c.table))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "tok-a") {
			t.Errorf("Parse(%s) = %v, want an error containing %q that does not quote the token", c.table, err, c.want)
		}
	}
}
