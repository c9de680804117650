package token_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview18eEveryCopyLeftOut: every copy of a kid listed more than once
// in a fetched JWK Set is left out, and counted once: which key the kid
// names cannot be told. A copy that also carries a private member was left
// out for that member alone, without counting as a listing of its kid, so
// the set's other copy was kept and verified tokens under the kid (before
// it, as the first copy, or after it). Encryption keys do not count as a
// listing, private or not.
func TestReview18eEveryCopyLeftOut(t *testing.T) {
	x, a, b := edKey(t), edKey(t), edKey(t)
	private := func(kid string) map[string]any {
		m := jwk(t, kid, b.Public())
		m["d"] = base64.RawURLEncoding.EncodeToString(b.Seed())
		return m
	}
	enc := func(m map[string]any) map[string]any { m["use"] = "enc"; return m }
	for _, tc := range []struct {
		name  string
		keys  []map[string]any
		aOK   bool // a token under kid "a" verifies
		count string
		lists []string
	}{
		{"private_copy_after", []map[string]any{jwk(t, "x", x.Public()), jwk(t, "a", a.Public()), private("a")}, false,
			"2 keys left out, 1 kept", []string{`JWK "a": has private member "d"`, `JWK "a": kid listed again later`}},
		{"private_copy_before", []map[string]any{jwk(t, "x", x.Public()), private("a"), jwk(t, "a", a.Public())}, false,
			"2 keys left out, 1 kept", []string{`JWK "a": has private member "d"`, `JWK "a": kid listed twice`}},
		{"three_copies", []map[string]any{jwk(t, "x", x.Public()), jwk(t, "a", a.Public()), jwk(t, "a", a.Public()), jwk(t, "a", a.Public())}, false,
			"3 keys left out, 1 kept", []string{`JWK "a": kid listed again later`, `JWK "a": kid listed twice`}},
		{"unusable_first_copy", []map[string]any{jwk(t, "x", x.Public()), {"kty": "oct-x", "kid": "a"}, jwk(t, "a", a.Public())}, false,
			"2 keys left out, 1 kept", []string{`JWK "a": kty must be`, `JWK "a": kid listed twice`}},
		{"private_enc_copy", []map[string]any{jwk(t, "x", x.Public()), jwk(t, "a", a.Public()), enc(private("a"))}, true,
			"1 keys left out, 2 kept", []string{`JWK "a": has private member "d"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRemote(t, jwks(t, tc.keys...), token.RemoteKeySetOptions{})
			f.ok(t, "key x", edToken(t, x, "x"))
			if tc.aOK {
				f.ok(t, "kid a", edToken(t, a, "a"))
			} else {
				f.refused(t, "kid a", edToken(t, a, "a"), "unknown kid")
			}
			errs := f.errs.all()
			if len(errs) != 1 {
				t.Fatalf("%d reports, want 1: %v", len(errs), errs)
			}
			msg := errs[0].Error()
			for _, want := range append(tc.lists, tc.count) {
				if !strings.Contains(msg, want) {
					t.Errorf("report %q: lacks %q", msg, want)
				}
			}
		})
	}
}
