package token_test

import (
	"crypto"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpguard/mcpguard/token"
)

// signRaw signs claims under a header naming alg and kid with priv, by
// hand: RFC 9864's "Ed25519" is not an algorithm the jwt package signs.
func signRaw(t *testing.T, alg, kid string, priv ed25519.PrivateKey) string {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	h, err := json.Marshal(map[string]string{"alg": alg, "kid": kid, "typ": "JWT"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := json.Marshal(claims(nil))
	if err != nil {
		t.Fatal(err)
	}
	input := enc(h) + "." + enc(c)
	return input + "." + enc(ed25519.Sign(priv, []byte(input)))
}

// TestReview21Ed25519Alg checks RFC 9864's fully specified "Ed25519", the
// name that replaces the deprecated "EdDSA" for Ed25519 signatures: a
// token signed under it verifies with an Ed25519 key, and a key bound to
// one of the two names verifies that one only.
func TestReview21Ed25519Alg(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pub := priv.Public()
	bare := newJWT(t, token.JWTConfig{Keys: map[string]crypto.PublicKey{"ed": pub}})
	onlyNew := newJWT(t, token.JWTConfig{Keys: map[string]crypto.PublicKey{"ed": token.AlgKey{Key: pub, Alg: "Ed25519"}}})
	onlyOld := newJWT(t, token.JWTConfig{Keys: map[string]crypto.PublicKey{"ed": token.AlgKey{Key: pub, Alg: "EdDSA"}}})
	newTok := signRaw(t, "Ed25519", "ed", priv)
	oldTok := sign(t, jwt.SigningMethodEdDSA, priv, "ed", claims(nil))
	for _, tt := range []struct {
		name    string
		v       *token.JWT
		tok     string
		wantErr string
	}{
		{"bare_key_new_alg", bare, newTok, ""},
		{"bare_key_old_alg", bare, oldTok, ""},
		{"new_bound_new_alg", onlyNew, newTok, ""},
		{"new_bound_old_alg", onlyNew, oldTok, "algorithm EdDSA not accepted"},
		{"old_bound_new_alg", onlyOld, newTok, "algorithm Ed25519 not accepted"},
		{"old_bound_old_alg", onlyOld, oldTok, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pr, _, err := tt.v.Verify(tt.tok)
			if tt.wantErr == "" {
				if err != nil || pr == nil || pr.Subject != "alice" {
					t.Fatalf("Verify = %v, %v; want alice", pr, err)
				}
				return
			}
			checkRefusal(t, err, tt.tok, tt.wantErr)
		})
	}

	// A forged "Ed25519" token (a signature of another key) is refused.
	_, other, _ := ed25519.GenerateKey(nil)
	if _, _, err := bare.Verify(signRaw(t, "Ed25519", "ed", other)); err == nil {
		t.Fatal("a token signed by another key verified")
	}
	// An RSA key does not verify an "Ed25519" token naming it.
	k := newTestKeys(t)
	rsaOnly := newJWT(t, token.JWTConfig{Keys: map[string]crypto.PublicKey{"ed": &k.rsa.PublicKey}})
	if _, _, err := rsaOnly.Verify(newTok); err == nil {
		t.Fatal("an Ed25519 token verified with an RSA key")
	}

	// A JWK Set publishing the key for "Ed25519" is read, bound to it.
	x := base64.RawURLEncoding.EncodeToString(pub.(ed25519.PublicKey))
	keys, err := token.ParseJWKS([]byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + x + `","kid":"ed","alg":"Ed25519"}]}`))
	if err != nil {
		t.Fatalf("ParseJWKS with alg Ed25519: %v", err)
	}
	if ak, ok := keys["ed"].(token.AlgKey); !ok || ak.Alg != "Ed25519" {
		t.Fatalf("ParseJWKS returned %#v; want an AlgKey for Ed25519", keys["ed"])
	}
	fromSet := newJWT(t, token.JWTConfig{Keys: keys})
	if _, _, err := fromSet.Verify(newTok); err != nil {
		t.Fatalf("a token of the set's alg: %v", err)
	}
	if _, _, err := fromSet.Verify(oldTok); err == nil || !strings.Contains(err.Error(), "algorithm EdDSA not accepted") {
		t.Fatalf("an EdDSA token with a key published for Ed25519: %v; want a refusal", err)
	}
	// The name is not a key type's: an RSA JWK may not claim it.
	if _, err := token.NewJWT(token.JWTConfig{Issuer: "i", Audience: "a",
		Keys: map[string]crypto.PublicKey{"r": token.AlgKey{Key: &k.rsa.PublicKey, Alg: "Ed25519"}}}); err == nil {
		t.Fatal("an RSA AlgKey for Ed25519 was accepted")
	}
}

// TestReview21Ed25519AlgRemote: a remote JWK Set's key published for
// "Ed25519" verifies tokens of that name and refuses "EdDSA" ones; a bare
// key verifies both.
func TestReview21Ed25519AlgRemote(t *testing.T) {
	a, b := edKey(t), edKey(t)
	enc := base64.RawURLEncoding.EncodeToString
	set := `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"a","alg":"Ed25519","x":"` + enc(a.Public().(ed25519.PublicKey)) +
		`"},{"kty":"OKP","crv":"Ed25519","kid":"b","x":"` + enc(b.Public().(ed25519.PublicKey)) + `"}]}`
	f := newRemote(t, []byte(set), token.RemoteKeySetOptions{})
	f.ok(t, "Ed25519 token, key bound to Ed25519", signRaw(t, "Ed25519", "a", a))
	f.refused(t, "EdDSA token, key bound to Ed25519", edToken(t, a, "a"), "does not match the key's alg")
	f.ok(t, "Ed25519 token, bare key", signRaw(t, "Ed25519", "b", b))
	f.ok(t, "EdDSA token, bare key", edToken(t, b, "b"))
	f.refused(t, "Ed25519 token signed by another key", signRaw(t, "Ed25519", "b", a), "signature")
}
