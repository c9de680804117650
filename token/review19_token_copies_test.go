package token_test

import (
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview19MalformedCopyLeavesEveryCopyOut: a fetched JWK Set leaves
// out every copy of a kid listed more than once, which key the kid names
// being unknown. A copy with a member of the wrong type (a number for "x"
// or "use", say) was left out as "not an object of string members"
// without counting as a listing of its kid, though its kid was a string:
// the other copy was kept and verified tokens under the kid, before it or
// after it. Such a copy counts now, unless its "use" or "key_ops" reads as
// another use than verifying signatures, or it has no kid string.
func TestReview19MalformedCopyLeavesEveryCopyOut(t *testing.T) {
	x, a, b := edKey(t), edKey(t), edKey(t)
	bad := func(kid string, edit func(m map[string]any)) map[string]any {
		m := jwk(t, kid, b.Public())
		edit(m)
		return m
	}
	xNumber := func(m map[string]any) { m["x"] = 1 }
	for _, tc := range []struct {
		name  string
		keys  []map[string]any
		aOK   bool // a token under kid "a" verifies
		count string
		lists []string
	}{
		{"wrong_type_copy_after", []map[string]any{jwk(t, "x", x.Public()), jwk(t, "a", a.Public()), bad("a", xNumber)}, false,
			"2 keys left out, 1 kept", []string{`JWK 3: not an object of string members`, `JWK "a": kid listed again later`}},
		{"wrong_type_copy_before", []map[string]any{jwk(t, "x", x.Public()), bad("a", xNumber), jwk(t, "a", a.Public())}, false,
			"2 keys left out, 1 kept", []string{`JWK 2: not an object of string members`, `JWK "a": kid listed twice`}},
		{"wrong_type_member_before_kid", []map[string]any{jwk(t, "x", x.Public()), jwk(t, "a", a.Public()), bad("a", func(m map[string]any) { m["alg"] = 1 })}, false,
			"2 keys left out, 1 kept", []string{`JWK 3: not an object of string members`, `JWK "a": kid listed again later`}},
		{"unreadable_use", []map[string]any{jwk(t, "x", x.Public()), jwk(t, "a", a.Public()), bad("a", func(m map[string]any) { m["use"] = 1 })}, false,
			"2 keys left out, 1 kept", []string{`JWK 3: not an object of string members`, `JWK "a": kid listed again later`}},
		{"unreadable_key_ops", []map[string]any{jwk(t, "x", x.Public()), bad("a", func(m map[string]any) { delete(m, "use"); m["key_ops"] = "verify" }), jwk(t, "a", a.Public())}, false,
			"2 keys left out, 1 kept", []string{`JWK 2: not an object of string members`, `JWK "a": kid listed twice`}},
		// Not a copy of a signature key's kid: the kid "a" keeps its key.
		{"wrong_type_enc_copy", []map[string]any{jwk(t, "x", x.Public()), jwk(t, "a", a.Public()), bad("a", func(m map[string]any) { m["use"] = "enc"; m["x"] = 1 })}, true,
			"1 keys left out, 2 kept", []string{`JWK 3: not an object of string members`}},
		{"wrong_type_encrypt_ops_copy", []map[string]any{jwk(t, "x", x.Public()), bad("a", func(m map[string]any) { delete(m, "use"); m["key_ops"] = []string{"encrypt"}; m["x"] = 1 }), jwk(t, "a", a.Public())}, true,
			"1 keys left out, 2 kept", []string{`JWK 2: not an object of string members`}},
		{"kid_not_a_string", []map[string]any{jwk(t, "x", x.Public()), jwk(t, "a", a.Public()), bad("a", func(m map[string]any) { m["kid"] = 7 })}, true,
			"1 keys left out, 2 kept", []string{`JWK 3: not an object of string members`}},
		{"not_an_object", []map[string]any{jwk(t, "x", x.Public()), jwk(t, "a", a.Public())}, true,
			"1 keys left out, 2 kept", []string{`JWK 3: not an object of string members`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := jwks(t, tc.keys...)
			if tc.name == "not_an_object" {
				set = []byte(strings.Replace(string(set), `]}`, `,"a"]}`, 1))
			}
			f := newRemote(t, set, token.RemoteKeySetOptions{})
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

// TestReview19KidsDifferingInCase: a kid is compared exactly (RFC 7517,
// section 4.5: a case-sensitive string): kids that differ only in case
// name two keys, each verifying its own tokens only, and are no copies of
// one another.
func TestReview19KidsDifferingInCase(t *testing.T) {
	a, b := edKey(t), edKey(t)
	f := newRemote(t, jwks(t, jwk(t, "key", a.Public()), jwk(t, "KEY", b.Public())), token.RemoteKeySetOptions{})
	f.ok(t, "kid key", edToken(t, a, "key"))
	f.ok(t, "kid KEY", edToken(t, b, "KEY"))
	f.refused(t, "kid key signed by KEY's key", edToken(t, b, "key"), "")
	f.refused(t, "kid Key", edToken(t, a, "Key"), "unknown kid")
	if errs := f.errs.all(); len(errs) != 0 {
		t.Errorf("reports %v, want none", errs)
	}
	keys, err := token.ParseJWKS(jwks(t, jwk(t, "key", a.Public()), jwk(t, "KEY", b.Public())))
	if err != nil || len(keys) != 2 {
		t.Errorf("ParseJWKS of kids differing in case: %d keys, err %v; want 2, nil", len(keys), err)
	}
}
