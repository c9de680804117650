package token_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
)

// review55Attrs maps two attributes to a claim and a nested claim, and a
// third to a claim no token here carries.
func review55Attrs() map[string]string {
	return map[string]string{"tenant": "tid", "team": "org.team", "region": "geo"}
}

// TestReview55JWTAttrClaims: a verified JWT's principal had no Attrs, so a
// handler could not learn the caller's tenant or team from the token it
// came with (examples/ticket filters documents by the caller's team, which
// only its static token table could give). JWTConfig.AttrClaims names the
// claims that become Attrs; they must be strings, and a token where one is
// not is refused without its value quoted.
func TestReview55JWTAttrClaims(t *testing.T) {
	k := newTestKeys(t)
	spec := review55Attrs()
	v := newJWT(t, token.JWTConfig{Keys: k.public(), AttrClaims: spec})
	spec["tenant"] = "changed" // NewJWT copied the map

	for _, tc := range []struct {
		name string
		edit func(jwt.MapClaims)
		want map[string]string
	}{
		{"both", func(c jwt.MapClaims) { c["tid"] = "acme"; c["org"] = map[string]any{"team": "eng"} }, map[string]string{"tenant": "acme", "team": "eng"}},
		{"one", func(c jwt.MapClaims) { c["tid"] = "acme" }, map[string]string{"tenant": "acme"}},
		{"empty_string", func(c jwt.MapClaims) { c["tid"] = "" }, map[string]string{"tenant": ""}},
		{"none", nil, nil},
		{"a_claim_named_changed_is_not_read", func(c jwt.MapClaims) { c["changed"] = "x" }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := sign(t, jwt.SigningMethodRS256, k.rsa, "rsa", claims(tc.edit))
			pr, _, err := v.Verify(tok)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if diff := cmp.Diff(tc.want, pr.Attrs); diff != "" {
				t.Errorf("Attrs (-want +got):\n%s", diff)
			}
			if pr.Subject != "alice" || !cmp.Equal(pr.Roles, []string{"support", "admin"}) {
				t.Errorf("principal %+v: want alice with her roles", pr)
			}
		})
	}

	for _, tc := range []struct {
		name, want string
		edit       func(jwt.MapClaims)
	}{
		{"number", "tid claim is not a string", func(c jwt.MapClaims) { c["tid"] = 4207 }},
		{"array", "tid claim is not a string", func(c jwt.MapClaims) { c["tid"] = []string{"SECRET-acme"} }},
		{"null", "tid claim is not a string", func(c jwt.MapClaims) { c["tid"] = nil }},
		{"nested_object", "org.team claim is not a string", func(c jwt.MapClaims) { c["org"] = map[string]any{"team": map[string]any{"id": "SECRET"}} }},
		{"path_through_a_string", "org.team claim: a member on its path is not an object", func(c jwt.MapClaims) { c["org"] = "SECRET-org" }},
	} {
		t.Run("refused_"+tc.name, func(t *testing.T) {
			tok := sign(t, jwt.SigningMethodRS256, k.rsa, "rsa", claims(tc.edit))
			pr, _, err := v.Verify(tok)
			if err == nil {
				t.Fatalf("Verify = %+v, want a refusal", pr)
			}
			checkRefusal(t, err, tok, tc.want)
			if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "4207") {
				t.Errorf("the refusal %q quotes the claim's value", err)
			}
		})
	}

	for _, bad := range []map[string]string{{"": "tid"}, {"tenant": ""}} {
		_, err := token.NewJWT(token.JWTConfig{Keys: k.public(), Issuer: testIssuer, Audience: testAudience, AttrClaims: bad})
		if err == nil || !strings.Contains(err.Error(), "AttrClaims") {
			t.Errorf("NewJWT with AttrClaims %q: %v, want an error naming AttrClaims", bad, err)
		}
	}
}

// TestReview55VerifiersCarryAttrs: behind the go-sdk's
// auth.RequireBearerToken, the principal reaches the guard through the
// TokenInfo a Verifier makes and mcpguard.FromTokenInfo reads: the Attrs,
// the JWT's claims and a static table's alike, were lost on the way. They
// now travel in TokenInfo.Extra under token.ExtraAttrs, as a copy.
func TestReview55VerifiersCarryAttrs(t *testing.T) {
	k := newTestKeys(t)
	v := newJWT(t, token.JWTConfig{Keys: k.public(), AttrClaims: review55Attrs()})
	table, err := token.New(map[string]*policy.Principal{"tok-bob": {Subject: "bob", Roles: []string{"sales"}, Attrs: map[string]string{"team": "sales"}}})
	if err != nil {
		t.Fatal(err)
	}
	fromInfo := mcpguard.FromTokenInfo(nil)
	for _, tc := range []struct {
		name   string
		verify auth.TokenVerifier
		tok    string
		want   *policy.Principal
	}{
		{"jwt", v.Verifier(), sign(t, jwt.SigningMethodRS256, k.rsa, "rsa", claims(func(c jwt.MapClaims) { c["tid"] = "acme" })),
			&policy.Principal{Subject: "alice", Roles: []string{"support", "admin"}, Attrs: map[string]string{"tenant": "acme"}}},
		{"jwt_without_attrs", v.Verifier(), sign(t, jwt.SigningMethodRS256, k.rsa, "rsa", claims(nil)),
			&policy.Principal{Subject: "alice", Roles: []string{"support", "admin"}}},
		{"table", table.Verifier(), "tok-bob",
			&policy.Principal{Subject: "bob", Roles: []string{"sales"}, Attrs: map[string]string{"team": "sales"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ti, err := tc.verify(context.Background(), tc.tok, nil)
			if err != nil {
				t.Fatalf("verifier: %v", err)
			}
			req := &mcp.CallToolRequest{Extra: &mcp.RequestExtra{TokenInfo: ti}}
			id, err := fromInfo.Authenticate(context.Background(), req)
			if err != nil {
				t.Fatalf("FromTokenInfo: %v", err)
			}
			if diff := cmp.Diff(tc.want, id.Principal); diff != "" {
				t.Errorf("principal (-want +got):\n%s", diff)
			}
			if id.Principal.Attrs != nil {
				// The guard's copy is its own.
				id.Principal.Attrs["tenant"], id.Principal.Attrs["team"] = "x", "x"
				if again, _ := fromInfo.Authenticate(context.Background(), req); cmp.Equal(again.Principal.Attrs, id.Principal.Attrs) {
					t.Error("a change to one identity's Attrs shows in the next")
				}
			}
		})
	}
}

// TestReview55IntrospectorAttrClaims: IntrospectionConfig.AttrClaims reads
// attributes from the endpoint's answer as JWTConfig.AttrClaims does from
// claims; a cached answer gives each caller Attrs of its own.
func TestReview55IntrospectorAttrClaims(t *testing.T) {
	e := newIntroEndpoint(t)
	e.answer(tokAnn, introAnswer(t, func(m map[string]any) { m["tid"] = "acme"; m["org"] = map[string]any{"team": "eng"} }))
	e.answer(tokBob, introAnswer(t, func(m map[string]any) { m["sub"] = "bob"; m["tid"] = 12 }))
	i, log := newIntrospector(t, e, &clock{now: testNow}, func(c *token.IntrospectionConfig) { c.AttrClaims = review55Attrs() })
	want := map[string]string{"tenant": "acme", "team": "eng"}
	for n := range 2 {
		pr, _, err := i.Introspect(context.Background(), tokAnn)
		if err != nil {
			t.Fatalf("Introspect %d: %v; failures %v", n, err, log.all())
		}
		if diff := cmp.Diff(want, pr.Attrs); diff != "" {
			t.Errorf("lookup %d: Attrs (-want +got):\n%s", n, diff)
		}
		pr.Attrs["tenant"] = "changed by a caller"
	}
	if c := e.count(tokAnn); c != 1 {
		t.Errorf("the endpoint was asked %d times, want 1 (the second lookup cached)", c)
	}
	_, _, err := i.Introspect(context.Background(), tokBob)
	if !errors.Is(err, token.ErrInvalidToken) || !strings.Contains(err.Error(), "tid claim is not a string") {
		t.Errorf("an answer whose tid is a number: %v, want a refusal naming the claim", err)
	}
	ti, err := i.Verifier()(context.Background(), tokAnn, nil)
	if err != nil || !cmp.Equal(ti.Extra[token.ExtraAttrs], want) {
		t.Errorf("Verifier: %v %+v, want the Attrs in Extra[%q]", err, ti, token.ExtraAttrs)
	}
	if _, err := token.NewIntrospector(token.IntrospectionConfig{Endpoint: e.URL, Audience: introAudience, AttrClaims: map[string]string{"x": ""}}); err == nil || !strings.Contains(err.Error(), "AttrClaims") {
		t.Errorf("NewIntrospector with an empty claim: %v, want an error naming AttrClaims", err)
	}
}
