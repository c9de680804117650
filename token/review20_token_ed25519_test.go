package token_test

import (
	"crypto"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// smallOrderEd25519 are encodings of the points of Ed25519 of order 1, 2,
// 4 or 8: the eight canonical ones (the first eight, as libsodium's
// blocklist and "Taming the many EdDSAs" list them), then non-canonical
// ones (y at or over 2^255-19, or x's sign bit set on x = 0) that
// crypto/ed25519 decodes as well.
var smallOrderEd25519 = []string{
	"0100000000000000000000000000000000000000000000000000000000000000", // the neutral point (order 1)
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // y = -1 (order 2)
	"0000000000000000000000000000000000000000000000000000000000000000", // y = 0 (order 4)
	"0000000000000000000000000000000000000000000000000000000000000080",
	"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05", // order 8
	"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
	"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
	"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // y = p, read as 0
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
	"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // y = p+1, read as 1
	"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
	"0100000000000000000000000000000000000000000000000000000000000080", // the neutral point, x = -0
}

// forgeEdDSA returns a token naming kid that anyone can make without a
// private key and that crypto/ed25519 verifies with pub, a point of small
// order: the signature is R || 0, R a small-order point; [0]B - [k]pub is
// one of those points, and which one depends on the claims, so a "jti" is
// tried until R matches.
func forgeEdDSA(t *testing.T, pub ed25519.PublicKey, kid string) string {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	header := enc([]byte(`{"alg":"EdDSA","kid":"` + kid + `","typ":"JWT"}`))
	for n := 0; n < 500; n++ {
		c := claims(nil)
		c["jti"] = "forged-" + strconv.Itoa(n)
		c["roles"] = []string{"admin"}
		data, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		input := header + "." + enc(data)
		for _, r := range smallOrderEd25519[:8] {
			sig, _ := hex.DecodeString(r + strings.Repeat("00", 32))
			if ed25519.Verify(pub, []byte(input), sig) {
				return input + "." + enc(sig)
			}
		}
	}
	t.Fatalf("no forgery found for the key %x: is it of small order?", []byte(pub))
	return ""
}

// TestReview20Ed25519SmallOrderKeyRefused: crypto/ed25519 verifies
// without checking the order of the public key, and with a key of small
// order (the neutral point, all zeros as a placeholder, ...) a signature
// R || 0 verifies for one message in eight or more, so anyone, with no
// private key, can make tokens that verify under such a key: any subject,
// any roles. Such a key is refused wherever keys come from (ParseJWKS,
// ParsePublicKeyPEM, JWTConfig.Keys, AlgKey), and a RemoteKeySet leaves it out, so a forged
// token naming it is refused as an unknown kid.
func TestReview20Ed25519SmallOrderKeyRefused(t *testing.T) {
	good := edKey(t)
	for _, h := range smallOrderEd25519 {
		raw, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		weak := ed25519.PublicKey(raw)
		t.Run(h[:8]+"_"+h[62:], func(t *testing.T) {
			forged := forgeEdDSA(t, weak, "weak")

			if _, err := token.ParseJWKS(jwks(t, jwk(t, "weak", weak))); err == nil || !strings.Contains(err.Error(), "small order") {
				t.Errorf("ParseJWKS: err %v, want the key refused for its small order", err)
			}
			der, err := x509.MarshalPKIXPublicKey(weak)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := token.ParsePublicKeyPEM(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})); err == nil || !strings.Contains(err.Error(), "small order") {
				t.Errorf("ParsePublicKeyPEM: err %v, want the key refused for its small order", err)
			}
			for what, k := range map[string]crypto.PublicKey{"bare": weak, "AlgKey": token.AlgKey{Key: weak, Alg: "EdDSA"}} {
				_, err := token.NewJWT(token.JWTConfig{Keys: map[string]crypto.PublicKey{"weak": k}, Issuer: testIssuer, Audience: testAudience, Now: func() time.Time { return testNow }})
				if err == nil || !strings.Contains(err.Error(), "small order") {
					t.Errorf("NewJWT with the key %s: err %v, want it refused for its small order", what, err)
				}
			}

			f := newRemote(t, jwks(t, jwk(t, "good", good.Public()), jwk(t, "weak", weak)), token.RemoteKeySetOptions{})
			f.refused(t, "a forged token naming the small-order key", forged, "unknown kid")
			f.ok(t, "a token of the good key", edToken(t, good, "good"))
			if errs := f.errs.all(); len(errs) != 1 || !strings.Contains(errs[0].Error(), `JWK "weak": Ed25519 key of small order`) {
				t.Errorf("reported %v, want the small-order key left out", errs)
			}
		})
	}
	// A key of the prime-order group, for contrast, is accepted.
	if _, err := token.ParseJWKS(jwks(t, jwk(t, "good", good.Public()))); err != nil {
		t.Errorf("ParseJWKS of a generated key: %v", err)
	}
}

// TestReview20Ed25519GeneratedKeysAccepted: keys made by
// ed25519.GenerateKey are of the prime-order group, and are never taken
// for keys of small order.
func TestReview20Ed25519GeneratedKeysAccepted(t *testing.T) {
	keys := map[string]crypto.PublicKey{}
	for n := range 300 {
		keys["k"+strconv.Itoa(n)] = edKey(t).Public()
	}
	if _, err := token.NewJWT(token.JWTConfig{Keys: keys, Issuer: testIssuer, Audience: testAudience}); err != nil {
		t.Errorf("NewJWT with 300 generated Ed25519 keys: %v", err)
	}
}
