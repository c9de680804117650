package token_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview19cMalformedCopies attacks the rule that a copy of a kid with a
// member of the wrong type leaves every copy out (mayVerify): every copy
// malformed, three copies, a malformed private copy, a kid given twice in
// one object (encoding/json keeps the string, JSON.parse the last), and
// "use" or "key_ops" null, which reads as no use here as in a well-formed
// copy (ParseJWKS skips a key whose "use" is present and not "sig"): such
// a copy is no listing of the kid, whether or not it is malformed.
func TestReview19cMalformedCopies(t *testing.T) {
	x, a, b := edKey(t), edKey(t), edKey(t)
	edit := func(kid string, f func(m map[string]any)) map[string]any {
		m := jwk(t, kid, b.Public())
		f(m)
		return m
	}
	xNumber := func(m map[string]any) { m["x"] = 1 }
	for _, tc := range []struct {
		name  string
		keys  []map[string]any
		raw   func(set string) string // edits the set's JSON text
		aOK   bool
		count string
	}{
		{"every_copy_malformed", []map[string]any{jwk(t, "x", x.Public()), edit("a", xNumber), edit("a", func(m map[string]any) { m["alg"] = 1 })}, nil, false,
			"2 keys left out, 1 kept"},
		{"three_copies_one_malformed", []map[string]any{jwk(t, "x", x.Public()), jwk(t, "a", a.Public()), edit("a", xNumber), jwk(t, "a", b.Public())}, nil, false,
			"3 keys left out, 1 kept"},
		{"malformed_private_copy", []map[string]any{jwk(t, "x", x.Public()), jwk(t, "a", a.Public()), edit("a", func(m map[string]any) { m["d"] = "AAAA"; m["x"] = 1 })}, nil, false,
			"2 keys left out, 1 kept"},
		{"kid_twice_in_one_copy", []map[string]any{jwk(t, "x", x.Public()), jwk(t, "a", a.Public()), edit("a", xNumber)},
			func(set string) string { return strings.Replace(set, `"x":1`, `"x":1,"kid":7`, 1) }, false,
			"2 keys left out, 1 kept"},
		{"null_use_malformed", []map[string]any{jwk(t, "x", x.Public()), jwk(t, "a", a.Public()), edit("a", func(m map[string]any) { m["use"] = nil; m["x"] = 1 })}, nil, true,
			"1 keys left out, 2 kept"},
		{"null_key_ops_malformed", []map[string]any{jwk(t, "x", x.Public()), edit("a", func(m map[string]any) { delete(m, "use"); m["key_ops"] = nil; m["x"] = 1 }), jwk(t, "a", a.Public())}, nil, true,
			"1 keys left out, 2 kept"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := string(jwks(t, tc.keys...))
			if tc.raw != nil {
				set = tc.raw(set)
			}
			f := newRemote(t, []byte(set), token.RemoteKeySetOptions{})
			f.ok(t, "key x", edToken(t, x, "x"))
			if tc.aOK {
				f.ok(t, "kid a", edToken(t, a, "a"))
			} else {
				f.refused(t, "kid a", edToken(t, a, "a"), "unknown kid")
				f.refused(t, "kid a, the other copy's key", edToken(t, b, "a"), "unknown kid")
			}
			errs := f.errs.all()
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.count) {
				t.Errorf("reports %v, want one that says %q", errs, tc.count)
			}
		})
	}

	// A well-formed copy with "use" null is skipped, no listing either.
	f := newRemote(t, jwks(t, jwk(t, "a", a.Public()), edit("a", func(m map[string]any) { m["use"] = nil })), token.RemoteKeySetOptions{})
	f.ok(t, "kid a beside a well-formed copy with use null", edToken(t, a, "a"))
}

// TestReview19cOnlyMalformedCopies: a set whose only keys are malformed
// copies of one kid has no key: NewRemoteKeySet's first fetch fails.
func TestReview19cOnlyMalformedCopies(t *testing.T) {
	a, b := edKey(t), edKey(t)
	one := jwk(t, "a", a.Public())
	one["x"] = 1
	two := jwk(t, "a", b.Public())
	two["use"] = 1
	set, err := json.Marshal(map[string]any{"keys": []any{one, two}})
	if err != nil {
		t.Fatal(err)
	}
	srv := newJWKSServer(t, set)
	ks, err := token.NewRemoteKeySet(context.Background(), srv.URL+"/jwks.json", nil)
	if err == nil || !strings.Contains(err.Error(), "no signature verification keys") {
		t.Errorf("NewRemoteKeySet of malformed copies only = %v, %v; want no signature verification keys", ks, err)
	}
}
