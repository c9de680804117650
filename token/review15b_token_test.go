package token_test

import (
	"crypto"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview15bRolesPathNotShadowed: a dot in a roles path separates
// member names, always; a dot that is part of a name is written "\." (as
// in Keycloak's mappers). The path was read taking, at each step, the
// longest member name that fit, so a member whose name held the dots of
// the rest of the path stood in for the nested one. Whoever can name a
// member in an object on the path (an identity provider that merges a
// user-editable profile, such as Auth0's user_metadata, into the claim
// that holds the roles) then chose their own roles: with the issuer's
// {"authz": {"roles": ["viewer"]}}, a member "authz.roles" won, and when
// the user had no roles it was the only reading. Now each path reads
// exactly one place.
func TestReview15bRolesPathNotShadowed(t *testing.T) {
	k := newTestKeys(t)
	merged := newJWT(t, token.JWTConfig{Keys: k.public(), RolesClaim: "meta.authz.roles"})
	auth0 := newJWT(t, token.JWTConfig{Keys: k.public(), RolesClaim: `https://x\.example/meta.authz.roles`})
	client := newJWT(t, token.JWTConfig{Keys: k.public(), RolesClaim: `resource_access.mcp\.example\.com.roles`})
	rs := func(name string, v any) string {
		return sign(t, jwt.SigningMethodRS256, k.rsa, "rsa", claims(func(c jwt.MapClaims) {
			delete(c, "roles")
			c[name] = v
		}))
	}
	issuers := map[string]any{"roles": []string{"viewer"}}
	for _, tc := range []struct {
		name string
		v    *token.JWT
		tok  string
		want []string
	}{
		{"user_member_beside_issuer_roles", merged, rs("meta", map[string]any{"authz": issuers, "authz.roles": []string{"admin"}}), []string{"viewer"}},
		{"user_member_alone", merged, rs("meta", map[string]any{"authz.roles": []string{"admin"}}), nil},
		{"namespaced_claim_escaped", auth0, rs("https://x.example/meta", map[string]any{"authz": issuers, "authz.roles": []string{"admin"}}), []string{"viewer"}},
		{"namespaced_claim_not_split", auth0, rs("https://x", map[string]any{"example/meta": map[string]any{"authz": map[string]any{"roles": []string{"admin"}}}}), nil},
		{"escaped_dots_name_one_member", client, rs("resource_access", map[string]any{
			"mcp.example.com": map[string]any{"roles": []string{"admin"}},
			"mcp":             map[string]any{"example": map[string]any{"com": map[string]any{"roles": []string{"viewer"}}}},
		}), []string{"admin"}},
		{"escaped_dots_never_split", client, rs("resource_access", map[string]any{
			"mcp": map[string]any{"example": map[string]any{"com": map[string]any{"roles": []string{"admin"}}}},
		}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, _, err := tc.v.Verify(tc.tok)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if !slices.Equal(pr.Roles, tc.want) {
				t.Errorf("roles %q, want %q", pr.Roles, tc.want)
			}
		})
	}
}

// TestReview15bProviderShapedTokens: the strict alphabet (review 15) and
// the duplicate check still accept tokens shaped as Keycloak, Auth0,
// Microsoft Entra ID (v2.0) and Google issue them: unpadded base64url
// whose every segment holds '-' and '_', headers with "x5t", non-ASCII
// names, URLs as claim names, nested client roles.
func TestReview15bProviderShapedTokens(t *testing.T) {
	k := newTestKeys(t)
	exp, iat := testNow.Add(time.Hour).Unix(), testNow.Add(-time.Minute).Unix()
	for _, tc := range []struct {
		name   string
		roles  string
		method jwt.SigningMethod
		key    any
		kid    string
		claims jwt.MapClaims
		want   []string
	}{
		{"keycloak", `resource_access.mcp\.example\.com.roles`, jwt.SigningMethodES256, k.ec, "ec", jwt.MapClaims{
			"exp": exp, "iat": iat, "iss": testIssuer, "aud": []string{testAudience, "account"},
			"sub": "f3c1b2a4-5d6e-4f70-8a9b-0c1d2e3f4a5b", "typ": "Bearer", "azp": "mcp.example.com",
			"sid": "0d4c7e8f", "acr": "1", "allowed-origins": []string{"https://app.example.com"},
			"realm_access":    map[string]any{"roles": []string{"offline_access", "uma_authorization"}},
			"resource_access": map[string]any{"mcp.example.com": map[string]any{"roles": []string{"support"}}, "account": map[string]any{"roles": []string{"manage-account"}}},
			"scope":           "openid profile email", "email_verified": true, "name": "Zoë Åström", "preferred_username": "zoe",
		}, []string{"support"}},
		{"auth0", "https://example.com/roles", jwt.SigningMethodRS256, k.rsa, "rsa", jwt.MapClaims{
			"https://example.com/roles": []string{"admin"}, "iss": testIssuer, "sub": "auth0|64f1c2d3e4b5a6978812",
			"aud": []string{testAudience, "https://tenant.eu.auth0.com/userinfo"}, "iat": iat, "exp": exp,
			"scope": "openid profile read:tickets", "azp": "Xq3vR_8s-Kp2", "permissions": []string{"read:tickets"},
		}, []string{"admin"}},
		{"entra_v2", "roles", jwt.SigningMethodRS256, k.rsa, "rsa", jwt.MapClaims{
			"aud": testAudience, "iss": testIssuer, "iat": iat, "nbf": iat, "exp": exp,
			"aio": "AXQAi/8WAAAA", "azp": "6e74172b-be56-4843-9ff4-e66a39bb12e3", "azpacr": "0",
			"name": "Jürgen Müller", "oid": "690222be-ff1a-4d56-abd1-7e4f7d38e474", "preferred_username": "jm@contoso.onmicrosoft.com",
			"rh": "0.AAAAB", "roles": []string{"Tickets.Write"}, "scp": "access_as_user",
			"sub": "HKZpfaHyWadeOouYlitjrI-KffTm222X5rrV3xDqfKQ", "tid": "72f988bf-86f1-41af-91ab-2d7cd011db47", "uti": "fqiBqXLPj0eQa82S-IYFAA", "ver": "2.0",
		}, []string{"Tickets.Write"}},
		{"google", "", jwt.SigningMethodRS256, k.rsa, "rsa", jwt.MapClaims{
			"iss": testIssuer, "azp": "1234987819200.apps.googleusercontent.com", "aud": testAudience,
			"sub": "10769150350006150715113082367", "email": "jsmith@example.com", "email_verified": true,
			"at_hash": "HK6E_P6Dh8Y93mRNtsDB1Q", "iat": iat, "exp": exp,
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newJWT(t, token.JWTConfig{Keys: k.public(), RolesClaim: tc.roles})
			// "~ÿ~?" at each of the three alignments puts both of
			// base64url's own characters in the header and the claims;
			// "jti" varies until the signature has both too.
			const both = "~\u00ff~?aa~\u00ff~?aa~\u00ff~?"
			var tok string
			for n := 0; ; n++ {
				if n == 1000 {
					t.Fatal("no token with '-' and '_' in every segment")
				}
				tc.claims["jti"] = fmt.Sprintf("%s%d", both, n)
				jt := jwt.NewWithClaims(tc.method, tc.claims)
				jt.Header["kid"] = tc.kid
				jt.Header["x5t"] = both
				s, err := jt.SignedString(tc.key)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.ContainsFunc(strings.Split(s, "."), func(p string) bool { return !strings.ContainsAny(p, "-") || !strings.ContainsAny(p, "_") }) {
					tok = s
					break
				}
			}
			pr, _, err := v.Verify(tok)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if !slices.Equal(pr.Roles, tc.want) || pr.Subject != tc.claims["sub"] {
				t.Errorf("principal %+v, want subject %v, roles %q", *pr, tc.claims["sub"], tc.want)
			}
		})
	}
}

// TestReview15bJWTInvalidUTF8: a header or claims set that is not UTF-8
// (RFC 7519 section 7.2, RFC 8259 section 8.1) is refused, as one naming a
// member twice is. encoding/json turns each invalid byte into U+FFFD, so
// {"sub":"ann","sub\xff":"admin"} was Ann to the verifier, while a parser
// that drops such bytes (a downstream the token is passed on to) reads
// "sub" twice and may take "admin". (Subjects and roles are printable
// ASCII already; member names and other claims were not checked.)
func TestReview15bJWTInvalidUTF8(t *testing.T) {
	key := edKey(t)
	v := newJWT(t, token.JWTConfig{Keys: map[string]crypto.PublicKey{"ed": key.Public()}})
	exp := strconv.FormatInt(testNow.Add(time.Hour).Unix(), 10)
	body := func(extra string) string {
		return `{"iss":"` + testIssuer + `","aud":"` + testAudience + `","exp":` + exp + `,` + extra + `}`
	}
	hdr := `{"alg":"EdDSA","kid":"ed"}`
	if _, _, err := v.Verify(rawEdToken(key, hdr, body(`"sub":"ann","name":"Zoë"`))); err != nil {
		t.Fatalf("a token whose claims are UTF-8: %v", err)
	}
	for _, tc := range []struct{ name, header, payload, want string }{
		{"member_name_byte", hdr, body("\"sub\":\"ann\",\"sub\xff\":\"admin\""), "claims are not UTF-8"},
		{"latin1_claim", hdr, body("\"sub\":\"ann\",\"name\":\"Zo\xeb\""), "claims are not UTF-8"},
		{"overlong_nested", hdr, body("\"sub\":\"ann\",\"realm_access\":{\"r\xc0\xafoles\":[\"admin\"]}"), "claims are not UTF-8"},
		{"header_byte", `{"alg":"EdDSA","kid":"ed","x":"` + "\xfe" + `"}`, body(`"sub":"ann"`), "header is not UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := rawEdToken(key, tc.header, tc.payload)
			pr, _, err := v.Verify(tok)
			if err == nil {
				t.Fatalf("Verify accepted %s as %+v, want a refusal", tc.name, *pr)
			}
			checkRefusal(t, err, tok, tc.want)
		})
	}
}
