package token_test

// Review 10: a JWK's "alg" binds its key to that one algorithm (RFC 8725,
// section 3.1). ParseJWKS and a RemoteKeySet return such a key as an
// AlgKey, NewJWT takes AlgKeys in Keys, and a token that selects one is
// refused unless its header's "alg" is the key's.

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpguard/mcpguard/token"
)

// algCase is a token signed with method by key, naming kid, and the
// refusal it must meet ("" for accepted).
type algCase struct {
	name    string
	method  jwt.SigningMethod
	key     any
	kid     string
	wantErr string
}

// checkAlgCases verifies each case's token with v.
func checkAlgCases(t *testing.T, v *token.JWT, cases []algCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok := sign(t, tc.method, tc.key, tc.kid, claims(nil))
			_, _, err := v.Verify(tok)
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("Verify(%s token, kid %q) = %v, want accepted", tc.method.Alg(), tc.kid, err)
				}
				return
			}
			checkRefusal(t, err, tok, tc.wantErr)
		})
	}
}

// withAlg returns the JWK m with its "alg" set.
func withAlg(m map[string]any, alg string) map[string]any {
	m["alg"] = alg
	return m
}

// TestAlgKeyBindsJWK: a JWK Set whose RSA key "rs" names "alg": "RS256"
// verifies RS256 tokens with it and refuses PS256 and RS512 tokens signed
// by the same key, while an RSA key without "alg" in the same set still
// verifies every RSA algorithm; EC and Ed25519 keys with their alg verify
// it. The same holds whether the set is parsed once (ParseJWKS, Keys) or
// fetched (RemoteKeySet, KeySet).
func TestAlgKeyBindsJWK(t *testing.T) {
	k := newTestKeys(t)
	set := jwks(t,
		withAlg(jwk(t, "rs", &k.rsa.PublicKey), "RS256"),
		jwk(t, "any", &k.rsa2.PublicKey),
		withAlg(jwk(t, "ec", &k.ec.PublicKey), "ES256"),
		withAlg(jwk(t, "ed", k.ed.Public()), "EdDSA"),
	)
	keys, err := token.ParseJWKS(set)
	if err != nil {
		t.Fatalf("ParseJWKS: %v", err)
	}
	// ParseJWKS returns an AlgKey for a JWK with "alg", the bare key
	// otherwise.
	got := map[string]string{}
	for kid, key := range keys {
		got[kid] = fmt.Sprintf("%T", key)
		if ak, ok := key.(token.AlgKey); ok {
			got[kid] += fmt.Sprintf("{%T, %s}", ak.Key, ak.Alg)
		}
	}
	want := map[string]string{
		"rs":  "token.AlgKey{*rsa.PublicKey, RS256}",
		"any": "*rsa.PublicKey",
		"ec":  "token.AlgKey{*ecdsa.PublicKey, ES256}",
		"ed":  "token.AlgKey{ed25519.PublicKey, EdDSA}",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseJWKS value types (-want +got):\n%s", diff)
	}
	for kid, w := range map[string]crypto.PublicKey{
		"rs":  token.AlgKey{Key: &k.rsa.PublicKey, Alg: "RS256"},
		"any": &k.rsa2.PublicKey,
		"ec":  token.AlgKey{Key: &k.ec.PublicKey, Alg: "ES256"},
		"ed":  token.AlgKey{Key: k.ed.Public(), Alg: "EdDSA"},
	} {
		if !equalKey(w, keys[kid]) {
			t.Errorf("ParseJWKS: key %q = %v, want %v", kid, keys[kid], w)
		}
	}

	const mismatch = "does not match the key's alg"
	cases := []algCase{
		{"rs_RS256", jwt.SigningMethodRS256, k.rsa, "rs", ""},
		{"rs_PS256", jwt.SigningMethodPS256, k.rsa, "rs", "algorithm PS256 " + mismatch + " RS256"},
		{"rs_RS512", jwt.SigningMethodRS512, k.rsa, "rs", "algorithm RS512 " + mismatch + " RS256"},
		{"rs_PS512", jwt.SigningMethodPS512, k.rsa, "rs", "algorithm PS512 " + mismatch + " RS256"},
		{"rs_ES256", jwt.SigningMethodES256, k.ec, "rs", "algorithm ES256 " + mismatch + " RS256"},
		{"any_RS256", jwt.SigningMethodRS256, k.rsa2, "any", ""},
		{"any_RS384", jwt.SigningMethodRS384, k.rsa2, "any", ""},
		{"any_RS512", jwt.SigningMethodRS512, k.rsa2, "any", ""},
		{"any_PS256", jwt.SigningMethodPS256, k.rsa2, "any", ""},
		{"any_PS384", jwt.SigningMethodPS384, k.rsa2, "any", ""},
		{"any_PS512", jwt.SigningMethodPS512, k.rsa2, "any", ""},
		{"any_ES256", jwt.SigningMethodES256, k.ec, "any", "algorithm ES256 does not match the key's type"},
		{"ec_ES256", jwt.SigningMethodES256, k.ec, "ec", ""},
		{"ed_EdDSA", jwt.SigningMethodEdDSA, k.ed, "ed", ""},
		{"ed_ES256", jwt.SigningMethodES256, k.ec, "ed", "algorithm ES256 " + mismatch + " EdDSA"},
	}
	t.Run("keys", func(t *testing.T) {
		checkAlgCases(t, newJWT(t, token.JWTConfig{Keys: keys}), cases)
	})
	t.Run("remote", func(t *testing.T) {
		f := newRemote(t, set, token.RemoteKeySetOptions{})
		checkAlgCases(t, f.v, cases)
		if errs := f.errs.all(); len(errs) != 0 {
			t.Errorf("RemoteKeySet reported %v, want nothing left out", errs)
		}
	})
}

// TestAlgKeyByHand: AlgKeys given by hand in Keys verify their Alg only,
// and when every configured key is an AlgKey the parser accepts only
// their algorithms (another is "not accepted" before any key is looked
// up); a bare key beside them widens that to its type's algorithms. A
// token without kid may use a lone AlgKey.
func TestAlgKeyByHand(t *testing.T) {
	k := newTestKeys(t)
	only := newJWT(t, token.JWTConfig{Keys: map[string]crypto.PublicKey{
		"rs": token.AlgKey{Key: &k.rsa.PublicKey, Alg: "PS384"},
		"ed": token.AlgKey{Key: k.ed.Public(), Alg: "EdDSA"},
	}})
	t.Run("only_alg_keys", func(t *testing.T) {
		checkAlgCases(t, only, []algCase{
			{"rs_PS384", jwt.SigningMethodPS384, k.rsa, "rs", ""},
			{"rs_PS256", jwt.SigningMethodPS256, k.rsa, "rs", "algorithm PS256 not accepted"},
			{"rs_RS384", jwt.SigningMethodRS384, k.rsa, "rs", "algorithm RS384 not accepted"},
			{"rs_EdDSA", jwt.SigningMethodEdDSA, k.ed, "rs", "algorithm EdDSA does not match the key's alg PS384"},
			{"ed_EdDSA", jwt.SigningMethodEdDSA, k.ed, "ed", ""},
			{"ed_ES256", jwt.SigningMethodES256, k.ec, "ed", "algorithm ES256 not accepted"},
		})
	})
	mixed := newJWT(t, token.JWTConfig{Keys: map[string]crypto.PublicKey{
		"rs":  token.AlgKey{Key: &k.rsa.PublicKey, Alg: "PS384"},
		"any": &k.rsa2.PublicKey,
	}})
	t.Run("mixed", func(t *testing.T) {
		checkAlgCases(t, mixed, []algCase{
			{"rs_PS384", jwt.SigningMethodPS384, k.rsa, "rs", ""},
			{"rs_PS256", jwt.SigningMethodPS256, k.rsa, "rs", "algorithm PS256 does not match the key's alg PS384"},
			{"rs_RS256", jwt.SigningMethodRS256, k.rsa, "rs", "algorithm RS256 does not match the key's alg PS384"},
			{"any_PS256", jwt.SigningMethodPS256, k.rsa2, "any", ""},
			{"any_ES256", jwt.SigningMethodES256, k.ec, "any", "algorithm ES256 not accepted"},
		})
	})
	lone := newJWT(t, token.JWTConfig{Keys: map[string]crypto.PublicKey{
		"ec": token.AlgKey{Key: &k.ec.PublicKey, Alg: "ES256"},
	}})
	t.Run("lone_no_kid", func(t *testing.T) {
		checkAlgCases(t, lone, []algCase{
			{"ES256", jwt.SigningMethodES256, k.ec, "", ""},
			{"ES256_kid", jwt.SigningMethodES256, k.ec, "ec", ""},
		})
	})
}

// TestNewJWTRefusesBadAlgKey: NewJWT refuses an AlgKey whose Alg is not an
// algorithm of its Key's type (or no algorithm at all), whose Key it would
// refuse bare, or that nests another AlgKey, with an error naming the kid.
func TestNewJWTRefusesBadAlgKey(t *testing.T) {
	k := newTestKeys(t)
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey := &k.rsa.PublicKey
	tests := []struct {
		name    string
		key     crypto.PublicKey
		wantErr string
	}{
		{"rsa_with_ES256", token.AlgKey{Key: rsaKey, Alg: "ES256"}, `Alg "ES256" is not an algorithm of its *rsa.PublicKey key`},
		{"p256_with_ES384", token.AlgKey{Key: &k.ec.PublicKey, Alg: "ES384"}, `Alg "ES384" is not an algorithm of its *ecdsa.PublicKey key (want one of ES256)`},
		{"ed25519_with_RS256", token.AlgKey{Key: k.ed.Public(), Alg: "RS256"}, `Alg "RS256" is not an algorithm of its ed25519.PublicKey key`},
		{"unknown_alg", token.AlgKey{Key: rsaKey, Alg: "RS1"}, `Alg "RS1" is not an algorithm`},
		{"hmac_alg", token.AlgKey{Key: rsaKey, Alg: "HS256"}, `Alg "HS256" is not an algorithm`},
		{"none_alg", token.AlgKey{Key: rsaKey, Alg: "none"}, `Alg "none" is not an algorithm`},
		{"lower_case_alg", token.AlgKey{Key: rsaKey, Alg: "rs256"}, `Alg "rs256" is not an algorithm`},
		{"empty_alg", token.AlgKey{Key: rsaKey}, `Alg "" is not an algorithm`},
		{"nil_key", token.AlgKey{Alg: "RS256"}, "AlgKey: nil key"},
		{"nil_rsa_key", token.AlgKey{Key: (*rsa.PublicKey)(nil), Alg: "RS256"}, "AlgKey: nil RSA key"},
		{"rsa_1024", token.AlgKey{Key: &small.PublicKey, Alg: "RS256"}, "AlgKey: RSA key of 1024 bits, under 2048"},
		{"private_key", token.AlgKey{Key: k.rsa, Alg: "RS256"}, "AlgKey: unsupported key type *rsa.PrivateKey"},
		{"nested", token.AlgKey{Key: token.AlgKey{Key: rsaKey, Alg: "RS256"}, Alg: "RS256"}, "AlgKey whose Key is an AlgKey"},
		{"nested_pointer", token.AlgKey{Key: &token.AlgKey{Key: rsaKey, Alg: "RS256"}, Alg: "RS256"}, "unsupported key type *token.AlgKey"},
		{"pointer", &token.AlgKey{Key: rsaKey, Alg: "RS256"}, "unsupported key type *token.AlgKey"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := token.JWTConfig{
				Keys:   map[string]crypto.PublicKey{"good": k.ed.Public(), "k-1": tt.key},
				Issuer: testIssuer, Audience: testAudience,
			}
			v, err := token.NewJWT(cfg)
			want := `token: JWT: key "k-1": `
			if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewJWT = %v, %v; want an error starting %q and containing %q", v, err, want, tt.wantErr)
			}
		})
	}
}
