package token_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
)

const (
	testIssuer   = "https://issuer.example"
	testAudience = "mcp-orders"
)

// testNow is the clock of the verifiers under test.
var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testKeys are the issuer's private keys, generated per test.
type testKeys struct {
	rsa  *rsa.PrivateKey
	rsa2 *rsa.PrivateKey // not configured
	ec   *ecdsa.PrivateKey
	ed   ed25519.PrivateKey
}

func newTestKeys(t *testing.T) *testKeys {
	t.Helper()
	k := &testKeys{}
	var err error
	if k.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if k.rsa2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	if _, k.ed, err = ed25519.GenerateKey(rand.Reader); err != nil {
		t.Fatal(err)
	}
	return k
}

// public returns the verification keys by kid.
func (k *testKeys) public() map[string]crypto.PublicKey {
	return map[string]crypto.PublicKey{
		"rsa": &k.rsa.PublicKey,
		"ec":  &k.ec.PublicKey,
		"ed":  k.ed.Public(),
	}
}

func newJWT(t *testing.T, cfg token.JWTConfig) *token.JWT {
	t.Helper()
	if cfg.Issuer == "" {
		cfg.Issuer = testIssuer
	}
	if cfg.Audience == "" {
		cfg.Audience = testAudience
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return testNow }
	}
	v, err := token.NewJWT(cfg)
	if err != nil {
		t.Fatalf("NewJWT: %v", err)
	}
	return v
}

// claims returns valid claims for alice at testNow, changed by edit.
func claims(edit func(jwt.MapClaims)) jwt.MapClaims {
	c := jwt.MapClaims{
		"iss":   testIssuer,
		"aud":   testAudience,
		"sub":   "alice",
		"iat":   testNow.Unix(),
		"exp":   testNow.Add(time.Hour).Unix(),
		"roles": []string{"support", "admin"},
	}
	if edit != nil {
		edit(c)
	}
	return c
}

// sign signs c with key under method; kid "" leaves the header without one.
func sign(t *testing.T, method jwt.SigningMethod, key any, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("sign %s: %v", method.Alg(), err)
	}
	return s
}

// checkRefusal checks that err is a refusal that does not quote tok.
func checkRefusal(t *testing.T, err error, tok, want string) {
	t.Helper()
	if want == notJudged {
		unjudged(t, "", err, tok)
		return
	}
	if err == nil {
		t.Fatalf("err = nil, want a refusal containing %q", want)
	}
	if !errors.Is(err, token.ErrInvalidJWT) {
		t.Errorf("err = %v, does not unwrap to ErrInvalidJWT", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q, want it to contain %q", err, want)
	}
	msg := err.Error()
	for _, part := range strings.Split(tok, ".") {
		if len(part) >= 8 && strings.Contains(msg, part[len(part)-8:]) {
			t.Errorf("err = %q quotes the token", msg)
		}
	}
}

func TestJWTVerify(t *testing.T) {
	k := newTestKeys(t)
	strict := newJWT(t, token.JWTConfig{Keys: k.public()})
	lenient := newJWT(t, token.JWTConfig{Keys: k.public(), Leeway: 30 * time.Second})
	single := newJWT(t, token.JWTConfig{Keys: map[string]crypto.PublicKey{"only": &k.rsa.PublicKey}})
	scope := newJWT(t, token.JWTConfig{Keys: k.public(), RolesClaim: "scope"})
	rs := func(edit func(jwt.MapClaims)) string {
		return sign(t, jwt.SigningMethodRS256, k.rsa, "rsa", claims(edit))
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&k.rsa.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	valid := rs(nil)
	parts := strings.Split(valid, ".")
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(
		`{"iss":"`+testIssuer+`","aud":"`+testAudience+`","sub":"alice","exp":`+
			strconv.FormatInt(testNow.Add(time.Hour).Unix(), 10)+`,"roles":["admin","root"]}`)) + "." + parts[2]
	withHeader := func(h map[string]any) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims(nil))
		for n, v := range h {
			tok.Header[n] = v
		}
		s, err := tok.SignedString(k.rsa)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	alice := &policy.Principal{Subject: "alice", Roles: []string{"support", "admin"}}

	tests := []struct {
		name    string
		v       *token.JWT // nil: strict
		tok     string
		want    *policy.Principal
		wantExp time.Time // zero: testNow + 1h
		wantErr string
	}{
		{name: "rs256", tok: valid, want: alice},
		{name: "rs512", tok: sign(t, jwt.SigningMethodRS512, k.rsa, "rsa", claims(nil)), want: alice},
		{name: "ps256_for_rsa", tok: sign(t, jwt.SigningMethodPS256, k.rsa, "rsa", claims(nil)), want: alice},
		{name: "es256", tok: sign(t, jwt.SigningMethodES256, k.ec, "ec", claims(nil)), want: alice},
		{name: "eddsa", tok: sign(t, jwt.SigningMethodEdDSA, k.ed, "ed", claims(nil)), want: alice},
		{name: "aud_array_containing", tok: rs(func(c jwt.MapClaims) { c["aud"] = []string{"other", testAudience} }), want: alice},

		{name: "expired", tok: rs(func(c jwt.MapClaims) { c["exp"] = testNow.Unix() }), wantErr: "expired"},
		{name: "expired_within_leeway", v: lenient, tok: rs(func(c jwt.MapClaims) { c["exp"] = testNow.Add(-20 * time.Second).Unix() }), want: alice, wantExp: testNow.Add(-20 * time.Second)},
		{name: "expired_beyond_leeway", v: lenient, tok: rs(func(c jwt.MapClaims) { c["exp"] = testNow.Add(-40 * time.Second).Unix() }), wantErr: "expired"},
		{name: "missing_exp", tok: rs(func(c jwt.MapClaims) { delete(c, "exp") }), wantErr: "missing exp claim"},
		{name: "exp_string", tok: rs(func(c jwt.MapClaims) { c["exp"] = "tomorrow" }), wantErr: "wrong type"},
		{name: "nbf_future", tok: rs(func(c jwt.MapClaims) { c["nbf"] = testNow.Add(time.Minute).Unix() }), wantErr: "not valid yet"},
		{name: "nbf_future_within_leeway", v: lenient, tok: rs(func(c jwt.MapClaims) { c["nbf"] = testNow.Add(20 * time.Second).Unix() }), want: alice},
		{name: "iat_future", tok: rs(func(c jwt.MapClaims) { c["iat"] = testNow.Add(time.Minute).Unix() }), wantErr: "issued in the future"},
		{name: "iat_future_within_leeway", v: lenient, tok: rs(func(c jwt.MapClaims) { c["iat"] = testNow.Add(20 * time.Second).Unix() }), want: alice},
		{name: "wrong_issuer", tok: rs(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" }), wantErr: "wrong issuer"},
		{name: "missing_issuer", tok: rs(func(c jwt.MapClaims) { delete(c, "iss") }), wantErr: "missing or empty iss claim"},
		{name: "wrong_audience_string", tok: rs(func(c jwt.MapClaims) { c["aud"] = "mcp-billing" }), wantErr: "wrong audience"},
		{name: "wrong_audience_array", tok: rs(func(c jwt.MapClaims) { c["aud"] = []string{"mcp-billing", "x"} }), wantErr: "wrong audience"},
		{name: "missing_audience", tok: rs(func(c jwt.MapClaims) { delete(c, "aud") }), wantErr: "missing or empty aud claim"},
		{name: "empty_audience_array", tok: rs(func(c jwt.MapClaims) { c["aud"] = []string{} }), wantErr: "missing or empty aud claim"},

		{name: "alg_none", tok: sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "rsa", claims(nil)), wantErr: "algorithm none not accepted"},
		{name: "hs256_with_public_key_pem", tok: sign(t, jwt.SigningMethodHS256, pubPEM, "rsa", claims(nil)), wantErr: "algorithm HS256 not accepted"},
		{name: "hs256_with_public_key_der", tok: sign(t, jwt.SigningMethodHS256, pubDER, "rsa", claims(nil)), wantErr: "algorithm HS256 not accepted"},
		{name: "rs256_with_ec_kid", tok: sign(t, jwt.SigningMethodRS256, k.rsa, "ec", claims(nil)), wantErr: "does not match the key's type"},
		{name: "es256_with_rsa_kid", tok: sign(t, jwt.SigningMethodES256, k.ec, "rsa", claims(nil)), wantErr: "does not match the key's type"},
		{name: "eddsa_with_ec_kid", tok: sign(t, jwt.SigningMethodEdDSA, k.ed, "ec", claims(nil)), wantErr: "does not match the key's type"},
		{name: "es384_not_configured", tok: sign(t, jwt.SigningMethodES384, mustEC(t, elliptic.P384()), "ec", claims(nil)), wantErr: "algorithm ES384 not accepted"},
		{name: "unknown_alg", tok: withHeader(map[string]any{"alg": "RS1"}), wantErr: "missing or unsupported algorithm"},
		{name: "unknown_kid", tok: sign(t, jwt.SigningMethodRS256, k.rsa, "rsa-2025", claims(nil)), wantErr: "unknown kid"},
		{name: "kid_not_string", tok: withHeader(map[string]any{"kid": 7}), wantErr: "kid is not a string"},
		{name: "no_kid_several_keys", tok: sign(t, jwt.SigningMethodRS256, k.rsa, "", claims(nil)), wantErr: "no kid and several keys"},
		{name: "no_kid_single_key", v: single, tok: sign(t, jwt.SigningMethodRS256, k.rsa, "", claims(nil)), want: alice},
		{name: "crit_header", tok: withHeader(map[string]any{"kid": "rsa", "crit": []string{"b64"}, "b64": false}), wantErr: `"crit"`},
		{name: "tampered_payload", tok: tampered, wantErr: "signature does not verify"},
		{name: "other_rsa_key", tok: sign(t, jwt.SigningMethodRS256, k.rsa2, "rsa", claims(nil)), wantErr: "signature does not verify"},
		{name: "malformed", tok: "not-a-jwt", wantErr: "malformed"},
		{name: "four_segments", tok: valid + ".x", wantErr: "malformed"},
		{name: "padded_segment", tok: parts[0] + "=." + parts[1] + "." + parts[2], wantErr: "malformed"},
		{name: "empty", tok: "", wantErr: "empty token"},
		{name: "too_long", tok: rs(func(c jwt.MapClaims) { c["pad"] = strings.Repeat("x", 8<<10) }), wantErr: "longer than 8192 bytes"},

		{name: "missing_sub", tok: rs(func(c jwt.MapClaims) { delete(c, "sub") }), wantErr: "missing or empty sub claim"},
		{name: "empty_sub", tok: rs(func(c jwt.MapClaims) { c["sub"] = "" }), wantErr: "missing or empty sub claim"},
		{name: "sub_not_string", tok: rs(func(c jwt.MapClaims) { c["sub"] = 42 }), wantErr: "sub claim is not a string"},
		{name: "sub_with_newline", tok: rs(func(c jwt.MapClaims) { c["sub"] = "alice\nX-Admin: 1" }), wantErr: "sub must be printable ASCII"},
		{name: "sub_outer_space", tok: rs(func(c jwt.MapClaims) { c["sub"] = " alice" }), wantErr: "sub must not begin or end with spaces"},
		{name: "roles_space_separated", tok: rs(func(c jwt.MapClaims) { c["roles"] = "support  admin" }), want: alice},
		{name: "roles_absent", tok: rs(func(c jwt.MapClaims) { delete(c, "roles") }), want: &policy.Principal{Subject: "alice"}},
		{name: "roles_empty_array", tok: rs(func(c jwt.MapClaims) { c["roles"] = []string{} }), want: &policy.Principal{Subject: "alice", Roles: []string{}}},
		{name: "roles_number", tok: rs(func(c jwt.MapClaims) { c["roles"] = 1 }), wantErr: "roles claim is neither a string nor an array of strings"},
		{name: "roles_null", tok: rs(func(c jwt.MapClaims) { c["roles"] = nil }), wantErr: "roles claim is neither"},
		{name: "roles_object", tok: rs(func(c jwt.MapClaims) { c["roles"] = map[string]any{"admin": true} }), wantErr: "roles claim is neither"},
		{name: "roles_array_with_number", tok: rs(func(c jwt.MapClaims) { c["roles"] = []any{"admin", 1} }), wantErr: "roles claim holds a value that is not a string"},
		{name: "roles_with_comma", tok: rs(func(c jwt.MapClaims) { c["roles"] = []string{"support,admin"} }), wantErr: "without commas or spaces"},
		{name: "roles_with_space", tok: rs(func(c jwt.MapClaims) { c["roles"] = []string{"support admin"} }), wantErr: "without commas or spaces"},
		{name: "roles_empty_string_element", tok: rs(func(c jwt.MapClaims) { c["roles"] = []string{""} }), wantErr: "roles must be non-empty"},
		{name: "roles_claim_scope", v: scope, tok: rs(func(c jwt.MapClaims) { c["scope"] = "orders:read orders:write" }),
			want: &policy.Principal{Subject: "alice", Roles: []string{"orders:read", "orders:write"}}},
		{name: "roles_claim_scope_ignores_roles", v: scope, tok: valid, want: &policy.Principal{Subject: "alice"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.v
			if v == nil {
				v = strict
			}
			pr, exp, err := v.Verify(tt.tok)
			if tt.wantErr != "" {
				checkRefusal(t, err, tt.tok, tt.wantErr)
				if pr != nil || !exp.IsZero() {
					t.Errorf("Verify refused with %v but returned %v, %v", err, pr, exp)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if diff := cmp.Diff(tt.want, pr); diff != "" {
				t.Errorf("Verify principal (-want +got):\n%s", diff)
			}
			want := tt.wantExp
			if want.IsZero() {
				want = testNow.Add(time.Hour)
			}
			if !exp.Equal(want) {
				t.Errorf("Verify exp = %v, want %v", exp, want)
			}
			apr, err := v.Authenticate(context.Background(), tt.tok)
			if err != nil || !cmp.Equal(apr, pr) {
				t.Errorf("Authenticate = %v, %v; want %v, nil", apr, err, pr)
			}
		})
	}
}

func mustEC(t *testing.T, c elliptic.Curve) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestJWTAuthenticator checks that *JWT has the method set of
// gateway.Authenticator, so that it plugs into the gateway as it is.
func TestJWTAuthenticator(t *testing.T) {
	var _ interface {
		Authenticate(context.Context, string) (*policy.Principal, error)
	} = (*token.JWT)(nil)
}

func TestNewJWTErrors(t *testing.T) {
	k := newTestKeys(t)
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	offCurve := &ecdsa.PublicKey{Curve: elliptic.P256(), X: big.NewInt(1), Y: big.NewInt(1)}
	keys := func(kid string, key crypto.PublicKey) map[string]crypto.PublicKey {
		return map[string]crypto.PublicKey{kid: key}
	}
	good := k.public()
	tests := []struct {
		name    string
		cfg     token.JWTConfig
		wantErr string
	}{
		{"no_keys", token.JWTConfig{Issuer: testIssuer, Audience: testAudience}, "no keys"},
		{"no_issuer", token.JWTConfig{Keys: good, Audience: testAudience}, "no issuer"},
		{"no_audience", token.JWTConfig{Keys: good, Issuer: testIssuer}, "no audience"},
		{"negative_leeway", token.JWTConfig{Keys: good, Issuer: testIssuer, Audience: testAudience, Leeway: -time.Second}, "negative leeway"},
		{"rsa_1024", token.JWTConfig{Keys: keys("old", &small.PublicKey), Issuer: testIssuer, Audience: testAudience}, `key "old": RSA key of 1024 bits, under 2048`},
		{"rsa_value_not_pointer", token.JWTConfig{Keys: keys("v", k.rsa.PublicKey), Issuer: testIssuer, Audience: testAudience}, "unsupported key type rsa.PublicKey"},
		{"rsa_private", token.JWTConfig{Keys: keys("p", k.rsa), Issuer: testIssuer, Audience: testAudience}, "unsupported key type *rsa.PrivateKey"},
		{"p224", token.JWTConfig{Keys: keys("p224", &mustEC(t, elliptic.P224()).PublicKey), Issuer: testIssuer, Audience: testAudience}, "not on P-256, P-384 or P-521"},
		{"ec_off_curve", token.JWTConfig{Keys: keys("bad", offCurve), Issuer: testIssuer, Audience: testAudience}, "not a valid point"},
		{"ed25519_short", token.JWTConfig{Keys: keys("ed", ed25519.PublicKey(make([]byte, 31))), Issuer: testIssuer, Audience: testAudience}, "Ed25519 key of the wrong size"},
		{"hmac_secret", token.JWTConfig{Keys: keys("hs", []byte("secret")), Issuer: testIssuer, Audience: testAudience}, "unsupported key type []uint8"},
		{"nil_key", token.JWTConfig{Keys: keys("nil", nil), Issuer: testIssuer, Audience: testAudience}, "nil key"},
		{"nil_rsa_key", token.JWTConfig{Keys: keys("nil", (*rsa.PublicKey)(nil)), Issuer: testIssuer, Audience: testAudience}, "nil RSA key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := token.NewJWT(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewJWT = %v, %v; want error containing %q", v, err, tt.wantErr)
			}
		})
	}
}

// TestNewJWTCopiesKeys checks that a key added to the caller's map after
// NewJWT is not trusted.
func TestNewJWTCopiesKeys(t *testing.T) {
	k := newTestKeys(t)
	keys := map[string]crypto.PublicKey{"rsa": &k.rsa.PublicKey}
	v := newJWT(t, token.JWTConfig{Keys: keys})
	keys["ec"] = &k.ec.PublicKey
	tok := sign(t, jwt.SigningMethodES256, k.ec, "ec", claims(nil))
	_, _, err := v.Verify(tok)
	checkRefusal(t, err, tok, "algorithm ES256 not accepted")
}

// TestJWTVerifier runs the verifier inside the go-sdk's
// auth.RequireBearerToken on a loopback server, on the real clock: a valid
// token reaches the handler with its TokenInfo, an expired or forged one is
// answered 401 without the token in the body.
func TestJWTVerifier(t *testing.T) {
	k := newTestKeys(t)
	v, err := token.NewJWT(token.JWTConfig{Keys: k.public(), Issuer: testIssuer, Audience: testAudience})
	if err != nil {
		t.Fatal(err)
	}
	var seen *auth.TokenInfo
	h := auth.RequireBearerToken(v.Verifier(), nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = auth.TokenInfoFromContext(r.Context())
		w.WriteHeader(http.StatusOK)
	}))
	srv := httptest.NewServer(h) // listens on 127.0.0.1
	defer srv.Close()
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("server at %s, want loopback", srv.URL)
	}
	now := time.Now().Truncate(time.Second)
	mint := func(exp time.Time) string {
		return sign(t, jwt.SigningMethodES256, k.ec, "ec", jwt.MapClaims{
			"iss": testIssuer, "aud": []string{testAudience}, "sub": "alice",
			"iat": now.Add(-2 * time.Hour).Unix(), "exp": exp.Unix(), "roles": "support admin",
		})
	}
	get := func(tok string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	exp := now.Add(time.Hour)
	if code, body := get(mint(exp)); code != http.StatusOK {
		t.Fatalf("valid token: status %d (%s), want 200", code, body)
	}
	want := &auth.TokenInfo{UserID: "alice", Scopes: []string{"support", "admin"}, Expiration: exp}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("TokenInfo (-want +got):\n%s", diff)
	}

	seen = nil
	expired := mint(now.Add(-time.Minute))
	code, body := get(expired)
	if code != http.StatusUnauthorized || seen != nil {
		t.Errorf("expired token: status %d, handler saw %v; want 401, not reached", code, seen)
	}
	if !strings.Contains(body, "expired") || strings.Contains(body, expired[len(expired)-16:]) {
		t.Errorf("expired token: body %q, want the reason without the token", body)
	}

	forged := sign(t, jwt.SigningMethodRS256, k.rsa2, "rsa", claims(func(c jwt.MapClaims) { c["exp"] = exp.Unix(); c["iat"] = now.Unix() }))
	if code, body := get(forged); code != http.StatusUnauthorized {
		t.Errorf("forged token: status %d (%s), want 401", code, body)
	}

	_, err = v.Verifier()(context.Background(), expired, nil)
	if !errors.Is(err, auth.ErrInvalidToken) || !errors.Is(err, token.ErrInvalidJWT) {
		t.Errorf("Verifier error %v: want it to unwrap to auth.ErrInvalidToken and token.ErrInvalidJWT", err)
	}
}

// jwk marshals a public key as a JWK, as an issuer publishes it.
func jwk(t *testing.T, kid string, key crypto.PublicKey) map[string]any {
	t.Helper()
	b64 := base64.RawURLEncoding.EncodeToString
	m := map[string]any{"kid": kid, "use": "sig"}
	switch key := key.(type) {
	case *rsa.PublicKey:
		m["kty"], m["n"], m["e"] = "RSA", b64(key.N.Bytes()), b64(big.NewInt(int64(key.E)).Bytes())
	case *ecdsa.PublicKey:
		b, err := key.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		size := (len(b) - 1) / 2
		m["kty"], m["crv"] = "EC", key.Curve.Params().Name
		m["x"], m["y"] = b64(b[1:1+size]), b64(b[1+size:])
	case ed25519.PublicKey:
		m["kty"], m["crv"], m["x"] = "OKP", "Ed25519", b64(key)
	default:
		t.Fatalf("jwk: key type %T", key)
	}
	return m
}

func jwks(t *testing.T, keys ...map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseJWKS checks a round trip: keys generated here, published as a
// JWK Set, parsed back equal, and then verify tokens signed with them.
func TestParseJWKS(t *testing.T) {
	k := newTestKeys(t)
	p384 := mustEC(t, elliptic.P384())
	p521 := mustEC(t, elliptic.P521())
	enc := jwk(t, "enc-1", &k.rsa2.PublicKey)
	enc["use"] = "enc"
	wrap := jwk(t, "wrap-1", &k.rsa2.PublicKey)
	delete(wrap, "use")
	wrap["key_ops"] = []string{"wrapKey"}
	withAlg := jwk(t, "ps", &k.rsa.PublicKey)
	withAlg["alg"] = "PS256"
	data := jwks(t,
		jwk(t, "rsa", &k.rsa.PublicKey), jwk(t, "ec", &k.ec.PublicKey), jwk(t, "ed", k.ed.Public()),
		jwk(t, "p384", &p384.PublicKey), jwk(t, "p521", &p521.PublicKey), enc, wrap, withAlg)
	got, err := token.ParseJWKS(data)
	if err != nil {
		t.Fatalf("ParseJWKS: %v", err)
	}
	want := map[string]crypto.PublicKey{
		"rsa": &k.rsa.PublicKey, "ec": &k.ec.PublicKey, "ed": k.ed.Public(),
		"p384": &p384.PublicKey, "p521": &p521.PublicKey,
		"ps": token.AlgKey{Key: &k.rsa.PublicKey, Alg: "PS256"}, // a JWK with "alg"
	}
	if len(got) != len(want) {
		t.Errorf("ParseJWKS: kids %v, want %v (enc-1 and wrap-1 skipped)", keysOf(got), keysOf(want))
	}
	for kid, w := range want {
		g, ok := got[kid]
		if !ok || !equalKey(w, g) {
			t.Errorf("ParseJWKS: key %q = %v, want %v", kid, g, w)
		}
	}
	v := newJWT(t, token.JWTConfig{Keys: got})
	for _, tok := range []string{
		sign(t, jwt.SigningMethodRS256, k.rsa, "rsa", claims(nil)),
		sign(t, jwt.SigningMethodES256, k.ec, "ec", claims(nil)),
		sign(t, jwt.SigningMethodEdDSA, k.ed, "ed", claims(nil)),
		sign(t, jwt.SigningMethodES384, p384, "p384", claims(nil)),
		sign(t, jwt.SigningMethodES512, p521, "p521", claims(nil)),
	} {
		if _, _, err := v.Verify(tok); err != nil {
			t.Errorf("Verify with parsed keys: %v", err)
		}
	}
}

// equalKey reports whether got is want: the same public key, and for an
// AlgKey the same Alg too.
func equalKey(want, got crypto.PublicKey) bool {
	if w, ok := want.(token.AlgKey); ok {
		g, ok := got.(token.AlgKey)
		return ok && g.Alg == w.Alg && equalKey(w.Key, g.Key)
	}
	return want.(interface{ Equal(crypto.PublicKey) bool }).Equal(got)
}

func keysOf(m map[string]crypto.PublicKey) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func TestParseJWKSErrors(t *testing.T) {
	k := newTestKeys(t)
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(m map[string]any, f func(map[string]any)) map[string]any {
		c := make(map[string]any, len(m))
		for n, v := range m {
			c[n] = v
		}
		f(c)
		return c
	}
	rsaJWK := jwk(t, "rsa", &k.rsa.PublicKey)
	ecJWK := jwk(t, "ec", &k.ec.PublicKey)
	edJWK := jwk(t, "ed", k.ed.Public())
	b64 := base64.RawURLEncoding.EncodeToString
	tests := []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{"not_json", []byte("{"), "not a JSON object"},
		{"no_keys_member", []byte(`{"kty":"RSA"}`), `no "keys" array`},
		{"keys_not_array", []byte(`{"keys":{}}`), "not a JSON object"},
		{"empty_set", []byte(`{"keys":[]}`), "no signature verification keys"},
		{"only_enc", jwks(t, edit(rsaJWK, func(m map[string]any) { m["use"] = "enc" })), "no signature verification keys"},
		{"duplicate_kid", jwks(t, rsaJWK, edit(ecJWK, func(m map[string]any) { m["kid"] = "rsa" })), `JWK "rsa": kid listed twice`},
		{"missing_kid", jwks(t, edit(rsaJWK, func(m map[string]any) { delete(m, "kid") })), "JWK 1: no kid"},
		{"private_rsa_d", jwks(t, edit(rsaJWK, func(m map[string]any) { m["d"] = b64(k.rsa.D.Bytes()) })), `JWK "rsa": has private member "d"`},
		{"private_ec_d", jwks(t, edit(ecJWK, func(m map[string]any) { m["d"] = b64([]byte{1}) })), `has private member "d"`},
		{"private_in_enc_key", jwks(t, rsaJWK, edit(rsaJWK, func(m map[string]any) { m["kid"], m["use"], m["p"] = "enc", "enc", "AQ" })), `JWK "enc": has private member "p"`},
		{"symmetric_k", jwks(t, map[string]any{"kty": "oct", "kid": "hs", "k": b64([]byte("secret"))}), `JWK "hs": has private member "k"`},
		{"unknown_kty", jwks(t, map[string]any{"kty": "oct", "kid": "sym-1"}), `JWK "sym-1": kty must be`},
		{"unknown_crv", jwks(t, edit(ecJWK, func(m map[string]any) { m["crv"] = "secp256k1" })), `JWK "ec": crv must be`},
		{"okp_x25519", jwks(t, edit(edJWK, func(m map[string]any) { m["crv"] = "X25519" })), `crv must be "Ed25519"`},
		{"ec_off_curve", jwks(t, edit(ecJWK, func(m map[string]any) {
			y, _ := base64.RawURLEncoding.DecodeString(m["y"].(string))
			y[len(y)-1] ^= 1
			m["y"] = b64(y)
		})), `JWK "ec": x, y is not a point on the curve`},
		{"ec_short_x", jwks(t, edit(ecJWK, func(m map[string]any) { m["x"] = b64([]byte{1, 2, 3}) })), "x and y must be 32 bytes each"},
		{"ec_missing_y", jwks(t, edit(ecJWK, func(m map[string]any) { delete(m, "y") })), "missing y"},
		{"base64_padding", jwks(t, edit(rsaJWK, func(m map[string]any) { m["e"] = "AQAB=" })), "e is not base64url without padding"},
		{"base64_std_alphabet", jwks(t, edit(rsaJWK, func(m map[string]any) {
			m["n"] = strings.NewReplacer("-", "+", "_", "/").Replace(m["n"].(string)) + "+/"
		})), "n is not base64url without padding"},
		{"base64_nonzero_trailing_bits", jwks(t, edit(edJWK, func(m map[string]any) {
			// 32 bytes are 43 characters, the last with 2 unused low bits.
			const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
			x := m["x"].(string)
			m["x"] = x[:42] + string(alphabet[strings.IndexByte(alphabet, x[42])|1])
		})), "x is not base64url without padding"},
		{"rsa_1024", jwks(t, jwk(t, "old", &small.PublicKey)), `JWK "old": RSA key of 1024 bits`},
		{"rsa_huge_e", jwks(t, edit(rsaJWK, func(m map[string]any) { m["e"] = b64([]byte{1, 0, 0, 0, 1}) })), "e is too large"},
		{"ed_short", jwks(t, edit(edJWK, func(m map[string]any) { m["x"] = b64(make([]byte, 31)) })), "Ed25519 key of the wrong size"},
		{"alg_hs256_on_rsa", jwks(t, edit(rsaJWK, func(m map[string]any) { m["alg"] = "HS256" })), `JWK "rsa": alg does not match the key`},
		{"alg_es384_on_p256", jwks(t, edit(ecJWK, func(m map[string]any) { m["alg"] = "ES384" })), "alg does not match the key"},
		{"member_wrong_type", jwks(t, edit(rsaJWK, func(m map[string]any) { m["n"] = 7 })), "JWK 1: not an object of string members"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := token.ParseJWKS(tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseJWKS = %v, %v; want error containing %q", keysOf(got), err, tt.wantErr)
			}
		})
	}
}

func TestParsePublicKeyPEM(t *testing.T) {
	k := newTestKeys(t)
	for name, pub := range map[string]crypto.PublicKey{"rsa": &k.rsa.PublicKey, "ec": &k.ec.PublicKey, "ed": k.ed.Public()} {
		t.Run(name, func(t *testing.T) {
			der, err := x509.MarshalPKIXPublicKey(pub)
			if err != nil {
				t.Fatal(err)
			}
			data := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
			got, err := token.ParsePublicKeyPEM(append(data, "\n\n"...))
			if err != nil {
				t.Fatalf("ParsePublicKeyPEM: %v", err)
			}
			if !pub.(interface{ Equal(crypto.PublicKey) bool }).Equal(got) {
				t.Errorf("ParsePublicKeyPEM = %v, want %v", got, pub)
			}
		})
	}

	der, err := x509.MarshalPKIXPublicKey(&k.rsa.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	privDER, err := x509.MarshalPKCS8PrivateKey(k.rsa)
	if err != nil {
		t.Fatal(err)
	}
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	smallDER, err := x509.MarshalPKIXPublicKey(&small.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{"empty", nil, "no PEM block"},
		{"not_pem", []byte("hello"), "no PEM block"},
		{"private_key", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}), `type "PRIVATE KEY", want "PUBLIC KEY"`},
		{"pkcs1", pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&k.rsa.PublicKey)}), `type "RSA PUBLIC KEY"`},
		{"two_blocks", append(append([]byte{}, pubPEM...), pubPEM...), "data after the PEM block"},
		{"garbage_der", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{0x30, 0x01, 0x00}}), "not a PKIX public key"},
		{"rsa_1024", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: smallDER}), "RSA key of 1024 bits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := token.ParsePublicKeyPEM(tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParsePublicKeyPEM = %T, %v; want error containing %q", got, err, tt.wantErr)
			}
		})
	}
}

// TestJWTNestedRolesClaim: a RolesClaim with dots reads the roles from
// nested objects when the token has no claim of that very name (Keycloak's
// "realm_access.roles"); a claim named with the dots is read first (Auth0's
// namespaced claims); a missing member means no roles; a member on the path
// that is not an object, or roles of the wrong type, refuse the token.
func TestJWTNestedRolesClaim(t *testing.T) {
	k := newTestKeys(t)
	keycloak := newJWT(t, token.JWTConfig{Keys: k.public(), RolesClaim: "realm_access.roles"})
	auth0 := newJWT(t, token.JWTConfig{Keys: k.public(), RolesClaim: "https://example.com/roles"})
	rs := func(edit func(jwt.MapClaims)) string {
		return sign(t, jwt.SigningMethodRS256, k.rsa, "rsa", claims(func(c jwt.MapClaims) {
			delete(c, "roles")
			edit(c)
		}))
	}
	for _, tc := range []struct {
		name    string
		v       *token.JWT
		tok     string
		want    []string
		wantErr string
	}{
		{name: "nested", v: keycloak, tok: rs(func(c jwt.MapClaims) {
			c["realm_access"] = map[string]any{"roles": []string{"support", "admin"}}
		}), want: []string{"support", "admin"}},
		{name: "nested_space_separated", v: keycloak, tok: rs(func(c jwt.MapClaims) {
			c["realm_access"] = map[string]any{"roles": "support admin"}
		}), want: []string{"support", "admin"}},
		{name: "dotted_name_first", v: keycloak, tok: rs(func(c jwt.MapClaims) {
			c["realm_access.roles"] = []string{"viewer"}
			c["realm_access"] = map[string]any{"roles": []string{"admin"}}
		}), want: []string{"viewer"}},
		{name: "namespaced_claim", v: auth0, tok: rs(func(c jwt.MapClaims) {
			c["https://example.com/roles"] = []string{"admin"}
		}), want: []string{"admin"}},
		{name: "no_parent", v: keycloak, tok: rs(func(jwt.MapClaims) {}), want: nil},
		{name: "no_member", v: keycloak, tok: rs(func(c jwt.MapClaims) {
			c["realm_access"] = map[string]any{"other": 1}
		}), want: nil},
		{name: "parent_not_object", v: keycloak, tok: rs(func(c jwt.MapClaims) {
			c["realm_access"] = []string{"admin"}
		}), wantErr: "realm_access.roles claim: a member on its path is not an object"},
		{name: "nested_wrong_type", v: keycloak, tok: rs(func(c jwt.MapClaims) {
			c["realm_access"] = map[string]any{"roles": map[string]any{"admin": true}}
		}), wantErr: "realm_access.roles claim is neither a string nor an array of strings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, _, err := tc.v.Verify(tc.tok)
			if tc.wantErr != "" {
				checkRefusal(t, err, tc.tok, tc.wantErr)
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
