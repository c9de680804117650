package token_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpguard/mcpguard/token"
)

// ExampleJWT loads an issuer's JWK Set and verifies its tokens. Behind the
// go-sdk's auth.RequireBearerToken, use v.Verifier(); in the gateway, v
// itself is an Authenticator.
func ExampleJWT() {
	// The issuer's key pair; the issuer publishes the public half.
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	jwks := fmt.Sprintf(`{"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "2026-03", "use": "sig", "x": %q}]}`,
		base64.RawURLEncoding.EncodeToString(pub))

	keys, err := token.ParseJWKS([]byte(jwks))
	if err != nil {
		panic(err)
	}
	v, err := token.NewJWT(token.JWTConfig{
		Keys:     keys,
		Issuer:   "https://login.example.com",
		Audience: "https://mcp.example.com/orders",
		Leeway:   30 * time.Second,
	})
	if err != nil {
		panic(err)
	}

	// The issuer signs a token for ann.
	mint := func(exp time.Time) string {
		t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
			"iss":   "https://login.example.com",
			"aud":   "https://mcp.example.com/orders",
			"sub":   "ann",
			"exp":   exp.Unix(),
			"roles": []string{"support", "billing"},
		})
		t.Header["kid"] = "2026-03"
		s, err := t.SignedString(priv)
		if err != nil {
			panic(err)
		}
		return s
	}

	pr, _, err := v.Verify(mint(time.Now().Add(5 * time.Minute)))
	fmt.Println(pr.Subject, pr.Roles, err)
	_, _, err = v.Verify(mint(time.Now().Add(-time.Hour)))
	fmt.Println(err)
	// Output:
	// ann [support billing] <nil>
	// token: invalid JWT: expired
}
