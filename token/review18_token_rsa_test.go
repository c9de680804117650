package token_test

import (
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/token"
)

// rsaOfBits is an RSA public key whose modulus has bits bits: odd, not a
// real key, which is enough to be checked and to cost a verification.
func rsaOfBits(bits int) *rsa.PublicKey {
	n := new(big.Int).Lsh(big.NewInt(1), uint(bits-1))
	n.Or(n, big.NewInt(1<<20+1))
	return &rsa.PublicKey{N: n, E: 65537}
}

// TestReview18RSAKeyTooLarge: a verification costs time that grows with
// the square of an RSA key's size, and is spent before the signature is
// known to be wrong: with a huge key in the set (a 1 MiB JWK Set holds an
// 8-million-bit one), anyone could make each request cost seconds to
// minutes of CPU with made-up signatures naming its kid. Keys over 8192
// bits are refused, as crypto/tls refuses them in certificates
// (CVE-2023-29409), wherever keys come from: ParseJWKS, ParsePublicKeyPEM,
// JWTConfig.Keys, and a RemoteKeySet, which leaves such a key out; 8192
// bits are accepted.
func TestReview18RSAKeyTooLarge(t *testing.T) {
	huge := rsaOfBits(8193)
	t.Run("parse_jwks", func(t *testing.T) {
		_, err := token.ParseJWKS(jwks(t, jwk(t, "huge", huge)))
		if err == nil || !strings.Contains(err.Error(), "RSA key of 8193 bits, over 8192") {
			t.Errorf("ParseJWKS: err %v, want the key refused for its size", err)
		}
		if _, err := token.ParseJWKS(jwks(t, jwk(t, "big", rsaOfBits(8192)))); err != nil {
			t.Errorf("ParseJWKS of an 8192-bit key: %v", err)
		}
	})
	t.Run("parse_pem", func(t *testing.T) {
		der, err := x509.MarshalPKIXPublicKey(huge)
		if err != nil {
			t.Fatal(err)
		}
		_, err = token.ParsePublicKeyPEM(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
		if err == nil || !strings.Contains(err.Error(), "over 8192") {
			t.Errorf("ParsePublicKeyPEM: err %v, want the key refused for its size", err)
		}
	})
	t.Run("config_keys", func(t *testing.T) {
		_, err := token.NewJWT(token.JWTConfig{Keys: map[string]crypto.PublicKey{"huge": huge}, Issuer: testIssuer, Audience: testAudience})
		if err == nil || !strings.Contains(err.Error(), "over 8192") {
			t.Errorf("NewJWT: err %v, want the key refused for its size", err)
		}
		_, err = token.NewJWT(token.JWTConfig{Keys: map[string]crypto.PublicKey{"huge": token.AlgKey{Key: huge, Alg: "RS256"}}, Issuer: testIssuer, Audience: testAudience})
		if err == nil || !strings.Contains(err.Error(), "over 8192") {
			t.Errorf("NewJWT with an AlgKey: err %v, want the key refused for its size", err)
		}
	})
	t.Run("remote_set", func(t *testing.T) {
		a := edKey(t)
		f := newRemote(t, jwks(t, jwk(t, "a", a.Public()), jwk(t, "huge", huge)), token.RemoteKeySetOptions{})
		// A made-up signature naming the huge key.
		claims := strings.Split(edToken(t, a, "a"), ".")[1]
		forged := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","kid":"huge","typ":"JWT"}`)) + "." + claims + "." + strings.Repeat("A", 1366)
		f.refused(t, "a token naming the huge key", forged, "unknown kid")
		if errs := f.errs.all(); len(errs) != 1 || !strings.Contains(errs[0].Error(), `JWK "huge": RSA key of 8193 bits, over 8192`) {
			t.Errorf("reported %v, want the huge key left out", errs)
		}
	})
}
