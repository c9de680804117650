package token

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestNewJWTECDSAKeyWithoutPoint: NewJWT documents that it "returns an
// error when ... an ECDSA key [is] on another curve or off its curve". A
// user who builds an *ecdsa.PublicKey by hand and forgets X or Y (or a
// decoder that leaves them nil) expects that error at start. Instead
// checkKey calls k.ECDH(), which calls Curve.IsOnCurve(nil, ...) and
// NewJWT panics with a nil pointer dereference.
func TestNewJWTECDSAKeyWithoutPoint(t *testing.T) {
	for name, k := range map[string]*ecdsa.PublicKey{
		"no_x_no_y": {Curve: elliptic.P256()},
		"no_y":      {Curve: elliptic.P256(), X: big.NewInt(1)},
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: NewJWT panicked (%v), want an error", name, r)
				}
			}()
			if _, err := NewJWT(JWTConfig{Keys: map[string]crypto.PublicKey{"k1": k}, Issuer: "https://idp.example", Audience: "mcp"}); err == nil {
				t.Errorf("%s: NewJWT accepted an ECDSA key without a point", name)
			}
		}()
	}
}

// TestVerifyRefusesFarFutureNbfAndIat: JWT's doc promises that "nbf" and
// "iat", when present, are "not in the future" or the token is refused. A
// token whose nbf (or iat) lies so far in the future that the seconds
// plus the Unix-to-internal offset overflow time.Time's int64 (jwt/v5's
// newNumericDateFromSeconds → time.Unix) is decoded as a date far in the
// past, and the token is accepted as valid now. The same values for exp
// fail closed (the token counts as expired), so only the "not valid yet"
// checks fail open. Fix: in Verify, refuse nbf/iat/exp numbers outside a
// sane range (e.g. above 253402300799, year 9999) before trusting the
// parser's time comparison.
func TestVerifyRefusesFarFutureNbfAndIat(t *testing.T) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewJWT(JWTConfig{Keys: map[string]crypto.PublicKey{"k1": &priv.PublicKey}, Issuer: "https://idp.example", Audience: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour).Unix()
	for _, claim := range []string{"nbf", "iat"} {
		c := jwt.MapClaims{"sub": "alice", "iss": "https://idp.example", "aud": "mcp", "exp": exp, claim: 9.2233720368e18}
		tk := jwt.NewWithClaims(jwt.SigningMethodES256, c)
		tk.Header["kid"] = "k1"
		s, err := tk.SignedString(priv)
		if err != nil {
			t.Fatal(err)
		}
		pr, _, err := v.Verify(s)
		if err == nil {
			t.Errorf("%s of 9.2233720368e18 (year ~2.9e11, in the future): token accepted as %q, want a refusal", claim, pr.Subject)
		} else if !errors.Is(err, ErrInvalidJWT) {
			t.Errorf("%s: err %v does not unwrap to ErrInvalidJWT", claim, err)
		}
	}
}
