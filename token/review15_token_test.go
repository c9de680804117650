package token_test

// Review 15: an attacker with a bearer token of their own, and an
// operator misconfiguring the package.

import (
	"crypto"
	"crypto/ed25519"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpguard/mcpguard/token"
)

// rawEdToken signs header and payload, JSON text taken verbatim (so that
// it may name a member twice), with key: an EdDSA compact JWS.
func rawEdToken(key ed25519.PrivateKey, header, payload string) string {
	in := base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + base64.RawURLEncoding.EncodeToString([]byte(payload))
	return in + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, []byte(in)))
}

// TestReview15JWTDuplicateMembers: a header or claims set that names a
// member twice is refused (RFC 7515 section 5.2, RFC 7519 section 4 allow
// refusing it), as an introspection answer or a token table is: encoding/json
// reads the last "sub", a parser that reads the first (a downstream the
// token is passed on to) sees another caller. Escaped names count.
func TestReview15JWTDuplicateMembers(t *testing.T) {
	key := edKey(t)
	v := newJWT(t, token.JWTConfig{Keys: map[string]crypto.PublicKey{"ed": key.Public()}})
	exp := strconv.FormatInt(testNow.Add(time.Hour).Unix(), 10)
	body := func(extra string) string {
		return `{"iss":"` + testIssuer + `","aud":"` + testAudience + `","exp":` + exp + `,` + extra + `}`
	}
	hdr := `{"alg":"EdDSA","kid":"ed"}`
	if _, _, err := v.Verify(rawEdToken(key, hdr, body(`"sub":"alice"`))); err != nil {
		t.Fatalf("the token without duplicates: %v", err)
	}
	for _, tc := range []struct{ name, header, payload, want string }{
		{"sub_twice", hdr, body(`"sub":"alice","sub":"admin"`), "claims name a member twice"},
		{"sub_escaped_twice", hdr, body(`"sub":"alice","\u0073ub":"admin"`), "claims name a member twice"},
		{"roles_twice", hdr, body(`"sub":"alice","roles":["viewer"],"roles":["admin"]`), "claims name a member twice"},
		{"nested_roles_twice", hdr, body(`"sub":"alice","realm_access":{"roles":["viewer"],"roles":["admin"]}`), "claims name a member twice"},
		{"aud_twice", hdr, body(`"sub":"alice","aud":"other"`), "claims name a member twice"},
		{"kid_twice", `{"alg":"EdDSA","kid":"other","kid":"ed"}`, body(`"sub":"alice"`), "header names a member twice"},
		{"alg_twice", `{"alg":"none","alg":"EdDSA","kid":"ed"}`, body(`"sub":"alice"`), "header names a member twice"},
		{"typ_twice", `{"alg":"EdDSA","kid":"ed","typ":"dpop+jwt","typ":"JWT"}`, body(`"sub":"alice"`), "header names a member twice"},
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

// TestReview15JWTStrayCharacters: a token is three base64url segments
// and nothing else. encoding/base64 skips CR and LF, so without a check
// of its own a token with a line break in its signature verified: another
// spelling of the same token, which a caller keying anything by the token
// would see as a new one.
func TestReview15JWTStrayCharacters(t *testing.T) {
	key := edKey(t)
	v := newJWT(t, token.JWTConfig{Keys: map[string]crypto.PublicKey{"ed": key.Public()}})
	good := edToken(t, key, "ed")
	if _, _, err := v.Verify(good); err != nil {
		t.Fatalf("the token itself: %v", err)
	}
	p := strings.Split(good, ".")
	for _, tc := range []struct{ name, tok string }{
		{"lf_in_signature", p[0] + "." + p[1] + "." + p[2][:10] + "\n" + p[2][10:]},
		{"cr_in_signature", p[0] + "." + p[1] + "." + p[2][:10] + "\r" + p[2][10:]},
		{"crlf_at_end", good + "\r\n"},
		{"lf_in_header", p[0][:5] + "\n" + p[0][5:] + "." + p[1] + "." + p[2]},
		{"tab_at_start", "\t" + good},
		{"std_alphabet", p[0] + "." + p[1] + "." + strings.NewReplacer("-", "+", "_", "/").Replace(p[2]) + "+/"},
		{"padding", p[0] + "." + p[1] + "." + p[2] + "=="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, _, err := v.Verify(tc.tok)
			if err == nil {
				t.Fatalf("Verify accepted %q as %+v, want a refusal", tc.name, *pr)
			}
			checkRefusal(t, err, tc.tok, "malformed")
		})
	}
}

// TestReview15NestedRolesDottedMember: a roles path reaches members whose
// names hold dots, such as Keycloak's client roles under
// resource_access.<client id>.roles for a client id "mcp.example.com",
// written with escaped dots (review 15b: the longest member name that
// fitted was taken at first, which let a dotted name shadow a nested one).
// Before, such a client's roles could not be named, and read as none.
func TestReview15NestedRolesDottedMember(t *testing.T) {
	k := newTestKeys(t)
	v := newJWT(t, token.JWTConfig{Keys: k.public(), RolesClaim: `resource_access.mcp\.example\.com.roles`})
	rs := func(access map[string]any) string {
		return sign(t, jwt.SigningMethodRS256, k.rsa, "rsa", claims(func(c jwt.MapClaims) {
			delete(c, "roles")
			c["resource_access"] = access
		}))
	}
	for _, tc := range []struct {
		name    string
		access  map[string]any
		want    []string
		wantErr string
	}{
		{"dotted_client_id", map[string]any{"mcp.example.com": map[string]any{"roles": []string{"admin"}}}, []string{"admin"}, ""},
		{"longest_member_first", map[string]any{
			"mcp.example.com": map[string]any{"roles": []string{"admin"}},
			"mcp":             map[string]any{"example": map[string]any{"com": map[string]any{"roles": []string{"viewer"}}}},
		}, []string{"admin"}, ""},
		{"escaped_path_not_split", map[string]any{"mcp": map[string]any{"example": map[string]any{"com": map[string]any{"roles": []string{"viewer"}}}}}, nil, ""},
		{"other_client", map[string]any{"other.example.com": map[string]any{"roles": []string{"admin"}}}, nil, ""},
		{"dotted_member_not_object", map[string]any{"mcp.example.com": []string{"admin"}}, nil, "a member on its path is not an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := rs(tc.access)
			pr, _, err := v.Verify(tok)
			if tc.wantErr != "" {
				checkRefusal(t, err, tok, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if !slices.Equal(pr.Roles, tc.want) {
				t.Errorf("roles %q, want %q", pr.Roles, tc.want)
			}
		})
	}
}
