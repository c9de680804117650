package token_test

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/token"
)

// derived is the subject Parse derives for a token without "sub".
func derived(tok string) string {
	d := sha256.Sum256([]byte(tok))
	return fmt.Sprintf("token-%x", d[:4])
}

// TestReview15DerivedSubjectCollision: a token without "sub" gets a
// subject from 4 bytes of its digest, so two tokens of a table can get one
// subject (about 1 in 100 for a table of 10000 such tokens), and a
// token's derived subject can be another entry's "sub". Two callers would
// then be one principal: one budget, one audit trail, and, behind
// BindSessions, each able to use and end the other's sessions. Parse
// refuses such a table, naming the entries, not the tokens.
func TestReview15DerivedSubjectCollision(t *testing.T) {
	// tok-25250 and tok-61579 share the first 4 bytes of their SHA-256.
	a, b := "tok-25250", "tok-61579"
	if derived(a) != derived(b) {
		t.Fatalf("precondition: %s and %s derive %s and %s", a, b, derived(a), derived(b))
	}
	for _, tc := range []struct{ name, table, want string }{
		{"two_derived", `{"` + a + `": "viewer", "` + b + `": "admin"}`, "entry 1: the subject derived from its token is also entry 2's"},
		{"derived_and_explicit", `{"` + a + `": "viewer", "tok-x": {"sub": "` + derived(a) + `", "role": "admin"}}`, "entry 1: the subject derived from its token is also entry 2's"},
		{"explicit_first", `{"a-tok": {"sub": "` + derived("z-tok") + `", "role": "admin"}, "z-tok": "viewer"}`, "entry 2: the subject derived from its token is also entry 1's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab, err := token.Parse([]byte(tc.table))
			if err == nil {
				t.Fatalf("Parse accepted the table (%v), want a refusal: two of its tokens are one principal", tab)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %q, want it to contain %q", err, tc.want)
			}
			for _, tok := range []string{a, b, "z-tok", "a-tok"} {
				if strings.Contains(err.Error(), tok) {
					t.Errorf("err = %q quotes a token", err)
				}
			}
		})
	}
	// Several tokens of one explicit subject stay allowed (a rotation).
	if _, err := token.Parse([]byte(`{"old-tok": {"sub": "svc", "role": "a"}, "new-tok": {"sub": "svc", "role": "a"}, "` + a + `": "viewer"}`)); err != nil {
		t.Errorf("two tokens of one explicit subject: %v", err)
	}
}
