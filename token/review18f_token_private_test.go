package token_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview18fPrivateCopyBounds: a private copy counts as a listing of
// its kid only when it is a signature key and has a kid. An encryption
// key's private copy (either order), a private key without a kid, and one
// whose key_ops lack "verify" leave the signature key of that kid in use;
// a private copy with neither "use" nor "key_ops" is a signature key, and
// leaves it out.
func TestReview18fPrivateCopyBounds(t *testing.T) {
	x, a, b := edKey(t), edKey(t), edKey(t)
	private := func(kid string, edit func(m map[string]any)) map[string]any {
		m := jwk(t, kid, b.Public())
		m["d"] = base64.RawURLEncoding.EncodeToString(b.Seed())
		edit(m)
		return m
	}
	enc := func(m map[string]any) { m["use"] = "enc" }
	noKid := func(m map[string]any) { delete(m, "kid") }
	bare := func(m map[string]any) { delete(m, "use") }
	signOnly := func(m map[string]any) { delete(m, "use"); m["key_ops"] = []string{"sign"} }
	for _, tc := range []struct {
		name  string
		keys  []map[string]any
		aOK   bool
		count string
	}{
		{"enc_private_before", []map[string]any{jwk(t, "x", x.Public()), private("a", enc), jwk(t, "a", a.Public())}, true, "1 keys left out, 2 kept"},
		{"private_without_kid", []map[string]any{jwk(t, "x", x.Public()), jwk(t, "a", a.Public()), private("", noKid)}, true, "1 keys left out, 2 kept"},
		{"private_sign_only", []map[string]any{jwk(t, "x", x.Public()), private("a", signOnly), jwk(t, "a", a.Public())}, true, "1 keys left out, 2 kept"},
		{"private_bare_before", []map[string]any{jwk(t, "x", x.Public()), private("a", bare), jwk(t, "a", a.Public())}, false, "2 keys left out, 1 kept"},
		{"private_bare_after", []map[string]any{jwk(t, "x", x.Public()), jwk(t, "a", a.Public()), private("a", bare)}, false, "2 keys left out, 1 kept"},
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
			if msg := errs[0].Error(); !strings.Contains(msg, `has private member "d"`) || !strings.Contains(msg, tc.count) {
				t.Errorf("report %q: want the private member and %q", msg, tc.count)
			}
		})
	}
}

// TestReview18fStrictPrivateCopy: ParseJWKS still refuses the set at the
// private member, whatever the order or the key's use, with that error
// alone (not the kid's listing).
func TestReview18fStrictPrivateCopy(t *testing.T) {
	a, b := edKey(t), edKey(t)
	priv := jwk(t, "a", b.Public())
	priv["d"] = base64.RawURLEncoding.EncodeToString(b.Seed())
	encPriv := jwk(t, "a", b.Public())
	encPriv["d"], encPriv["use"] = priv["d"], "enc"
	for name, keys := range map[string][]map[string]any{
		"after":  {jwk(t, "a", a.Public()), priv},
		"before": {priv, jwk(t, "a", a.Public())},
		"enc":    {jwk(t, "a", a.Public()), encPriv},
	} {
		_, err := token.ParseJWKS(jwks(t, keys...))
		const want = `token: JWK "a": has private member "d": a JWK Set for verification holds public keys only`
		if err == nil || err.Error() != want {
			t.Errorf("%s: ParseJWKS = %v, want %q", name, err, want)
		}
	}
}
