package token_test

// Review 25d: member names in two letter cases, in a JWK Set (after the
// fix of review 25c), in a JWT's claims and in an introspection answer.

import (
	"context"
	"crypto"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview25dJWKNamesEdgeCases: JWK member names are matched exactly
// however they are written: an escaped name is the name it decodes to, a
// member named in another case (the Kelvin sign, the long s), or with a
// NUL, an invalid UTF-8 byte or no name at all is unknown, ignored; exact
// duplicates keep encoding/json's last one, with a folded one between or
// not; a set with "KEYS" only has no keys.
func TestReview25dJWKNamesEdgeCases(t *testing.T) {
	k := newTestKeys(t)
	base, err := json.Marshal(jwk(t, "k", &k.rsa.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	// with is the JWK of k.rsa under kid "k" without "use", with extra
	// appended after its members.
	with := func(extra string) string {
		var m map[string]any
		if err := json.Unmarshal(base, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "use")
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b[:len(b)-1]) + "," + extra + "}"
	}
	for _, c := range []struct {
		name, extra string
		kept        bool
	}{
		{"escaped_use_enc_then_USE_sig", `"\u0075se":"enc","USE":"sig"`, false},
		{"escaped_use_sig_then_USE_enc", `"\u0075se":"sig","USE":"enc"`, true},
		{"use_sig_USE_use_enc", `"use":"sig","USE":"sig","use":"enc"`, false},
		{"use_enc_USE_use_sig", `"use":"enc","USE":"enc","use":"sig"`, true},
		{"use_with_nul", `"use\u0000":"enc"`, true},
		{"use_invalid_utf8", "\"us\xff\":\"enc\",\"use\":\"sig\"", true},
		{"empty_name", `"":"enc"`, true},
		{"kelvin_kty", `"\u212aty":"EC"`, true},
		{"long_s_use_among_many", strings.Repeat(`"USE":"enc","uſe":"enc","Use0":"enc",`, 2000) + `"use":"sig"`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			other, err := json.Marshal(jwk(t, "other", &k.rsa2.PublicKey))
			if err != nil {
				t.Fatal(err)
			}
			keys, err := token.ParseJWKS([]byte(`{"keys":[` + string(other) + "," + with(c.extra) + "]}"))
			if err != nil {
				t.Fatalf("ParseJWKS: %v", err)
			}
			if _, kept := keys["k"]; kept != c.kept {
				t.Errorf("key k kept: %v, want %v", kept, c.kept)
			}
		})
	}
	if _, err := token.ParseJWKS([]byte(`{"KEYS":[` + string(base) + `]}`)); err == nil || !strings.Contains(err.Error(), `no "keys" array`) {
		t.Errorf(`a set with "KEYS" only: %v, want no "keys" array`, err)
	}
	// Near-miss names cost what their bytes cost: 1 MiB of them in one
	// key (about 87,000 names) is read in about a second, 6 s under -race
	// on a loaded host; compared with each other rather than with the ten
	// names a JWK reads, they would take billions of comparisons. (The
	// bound was 3 s until the thirty-third session: it failed on a loaded
	// host.)
	var b strings.Builder
	for n := 0; b.Len() < 1<<20; n++ {
		b.WriteString(`"KID` + strconv.Itoa(n) + `":"x","Kid":"x",`)
	}
	start := time.Now()
	if _, err := token.ParseJWKS([]byte(`{"keys":[` + with(b.String()+`"use":"sig"`) + "]}")); err != nil {
		t.Errorf("1 MiB of near-miss names: %v", err)
	}
	d := time.Since(start)
	t.Logf("1 MiB of near-miss names read in %v", d)
	if d > 30*time.Second {
		t.Errorf("1 MiB of near-miss names took %v", d)
	}
}

// TestReview25dClaimsFoldedTwice: a claims set that names a member in two
// letter cases ("sub" and "SUB", or "ſub" with the long s) is refused, as
// one naming it twice is. mcpguard reads the exact "sub", encoding/json
// decoding into a struct (golang-jwt's RegisteredClaims, a program's own
// claims struct: what a Go service the token is passed on to runs) reads
// the last of the two: it would act for another subject, with other roles,
// than the one mcpguard authorized and audited.
func TestReview25dClaimsFoldedTwice(t *testing.T) {
	key := edKey(t)
	v := newJWT(t, token.JWTConfig{Keys: map[string]crypto.PublicKey{"ed": key.Public()}})
	exp := strconv.FormatInt(testNow.Add(time.Hour).Unix(), 10)
	body := func(extra string) string {
		return `{"iss":"` + testIssuer + `","aud":"` + testAudience + `","exp":` + exp + `,` + extra + `}`
	}
	hdr := `{"alg":"EdDSA","kid":"ed","typ":"JWT"}`
	// downstream is what a Go service reads of tok's claims.
	type downstream struct {
		jwt.RegisteredClaims
		Roles []string `json:"roles"`
	}
	for _, c := range []struct{ name, extra, sub, roles string }{
		{"sub_SUB", `"sub":"alice","SUB":"admin"`, "admin", ""},
		{"sub_long_s", `"sub":"alice","ſub":"admin"`, "admin", ""},
		{"roles_ROLES", `"sub":"alice","roles":["viewer"],"ROLES":["admin"]`, "alice", "admin"},
		{"exp_EXP", `"sub":"alice","EXP":` + strconv.FormatInt(testNow.Add(48*time.Hour).Unix(), 10), "alice", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			tok := rawEdToken(key, hdr, body(c.extra))
			var got downstream
			p := jwt.NewParser(jwt.WithTimeFunc(func() time.Time { return testNow }), jwt.WithValidMethods([]string{"EdDSA"}))
			if _, err := p.ParseWithClaims(tok, &got, func(*jwt.Token) (any, error) { return key.Public(), nil }); err != nil {
				t.Fatalf("golang-jwt with RegisteredClaims: %v", err)
			}
			if got.Subject != c.sub || c.roles != "" && strings.Join(got.Roles, " ") != c.roles {
				t.Fatalf("golang-jwt read sub %q and roles %q, want %q and %q", got.Subject, got.Roles, c.sub, c.roles)
			}
			pr, _, err := v.Verify(tok)
			if err == nil {
				t.Fatalf("Verify accepted the token as %+v", *pr)
			}
			checkRefusal(t, err, tok, "claims name a member twice")
		})
	}
	// A nested object on the roles path is read as a struct too.
	nv := newJWT(t, token.JWTConfig{Keys: map[string]crypto.PublicKey{"ed": key.Public()}, RolesClaim: "realm_access.roles"})
	tok := rawEdToken(key, hdr, body(`"sub":"alice","realm_access":{"roles":["viewer"],"ROLES":["admin"]}`))
	var got struct {
		RealmAccess struct {
			Roles []string `json:"roles"`
		} `json:"realm_access"`
	}
	if _, err := jwt.NewParser(jwt.WithTimeFunc(func() time.Time { return testNow })).ParseWithClaims(tok, &jwtClaims{&got}, func(*jwt.Token) (any, error) { return key.Public(), nil }); err != nil {
		t.Fatalf("golang-jwt: %v", err)
	}
	if strings.Join(got.RealmAccess.Roles, " ") != "admin" {
		t.Fatalf("golang-jwt read realm roles %q, want admin", got.RealmAccess.Roles)
	}
	if pr, _, err := nv.Verify(tok); err == nil {
		t.Errorf("Verify accepted realm_access.roles and ROLES as %+v", *pr)
	}
	if pr, _, err := nv.Verify(rawEdToken(key, hdr, body(`"sub":"alice","realm_access":{"ROLES":["admin"]}`))); err != nil || len(pr.Roles) != 0 {
		t.Errorf("realm_access with ROLES only: %+v, %v, want no roles", pr, err)
	}
	// Claims in another case alone are other claims; so are names that
	// fold alike within other nested objects (a map of client ids, say).
	for _, extra := range []string{
		`"sub":"alice","Roles":["admin"]`,
		`"sub":"alice","resource_access":{"App":{"roles":["a"]},"app":{"roles":["b"]}}`,
	} {
		pr, _, err := v.Verify(rawEdToken(key, hdr, body(extra)))
		if err != nil || pr.Subject != "alice" || len(pr.Roles) != 0 {
			t.Errorf("%s: %+v, %v, want alice without roles", extra, pr, err)
		}
	}
}

// jwtClaims makes any value a jwt.Claims, for reading claims into it.
type jwtClaims struct{ v any }

func (c *jwtClaims) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, c.v) }

func (c *jwtClaims) GetExpirationTime() (*jwt.NumericDate, error) { return nil, nil }
func (c *jwtClaims) GetIssuedAt() (*jwt.NumericDate, error)       { return nil, nil }
func (c *jwtClaims) GetNotBefore() (*jwt.NumericDate, error)      { return nil, nil }
func (c *jwtClaims) GetIssuer() (string, error)                   { return "", nil }
func (c *jwtClaims) GetSubject() (string, error)                  { return "", nil }
func (c *jwtClaims) GetAudience() (jwt.ClaimStrings, error)       { return nil, nil }

// TestReview25dIntrospectionFoldedTwice: an introspection answer that
// names a member in two letter cases is a failed introspection, as one
// naming it twice is: the go-sdk's own example verifier
// (examples/auth/server) decodes the answer into a struct, and would read
// the last of "sub" and "SUB".
func TestReview25dIntrospectionFoldedTwice(t *testing.T) {
	for _, c := range []struct{ name, old, new string }{
		{"sub_SUB", `"sub":"ann"`, `"sub":"ann","SUB":"root"`},
		{"scope_long_s", `"scope":"admin support"`, `"scope":"support","ſcope":"admin support"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := strings.Replace(introAnswer(t, nil), c.old, c.new, 1)
			if !strings.Contains(body, c.new) {
				t.Fatalf("the answer %s was not edited", body)
			}
			var sdk struct {
				Active bool   `json:"active"`
				Scope  string `json:"scope"`
				Sub    string `json:"sub"`
			}
			if err := json.Unmarshal([]byte(body), &sdk); err != nil || sdk.Sub+" "+sdk.Scope == "ann support" {
				t.Fatalf("a struct read %+v, %v: the same as mcpguard", sdk, err)
			}
			e := newIntroEndpoint(t)
			e.answer(tokAnn, body)
			i, _ := newIntrospector(t, e, &clock{now: testNow}, nil)
			pr, _, err := i.Introspect(context.Background(), tokAnn)
			if pr != nil {
				t.Fatalf("principal %+v, want none", *pr)
			}
			checkIntroFailure(t, err, "names a member twice")
		})
	}
}
