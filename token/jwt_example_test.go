package token_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
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

// ExampleNewRemoteKeySet verifies tokens against the JWK Set an issuer
// publishes at its jwks_uri, and follows a rotation of its keys.
func ExampleNewRemoteKeySet() {
	// The issuer publishes one key, then rotates to another.
	pub1, priv1, _ := ed25519.GenerateKey(rand.Reader)
	pub2, priv2, _ := ed25519.GenerateKey(rand.Reader)
	set := func(kid string, pub ed25519.PublicKey) string {
		return fmt.Sprintf(`{"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": %q, "use": "sig", "x": %q}]}`,
			kid, base64.RawURLEncoding.EncodeToString(pub))
	}
	var mu sync.Mutex
	published := set("2026-03", pub1)
	issuer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprint(w, published)
	}))
	defer issuer.Close()

	// In production the URL is https; the clock is time.Now.
	now := time.Now()
	keys, err := token.NewRemoteKeySet(context.Background(), issuer.URL+"/jwks.json", &token.RemoteKeySetOptions{
		Now: func() time.Time { return now },
	})
	if err != nil {
		panic(err)
	}
	v, err := token.NewJWT(token.JWTConfig{
		KeySet:   keys,
		Issuer:   "https://login.example.com",
		Audience: "https://mcp.example.com/orders",
	})
	if err != nil {
		panic(err)
	}
	mint := func(kid string, priv ed25519.PrivateKey) string {
		t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
			"iss": "https://login.example.com",
			"aud": "https://mcp.example.com/orders",
			"sub": "ann",
			"exp": time.Now().Add(5 * time.Minute).Unix(),
		})
		t.Header["kid"] = kid
		s, err := t.SignedString(priv)
		if err != nil {
			panic(err)
		}
		return s
	}

	_, _, err = v.Verify(mint("2026-03", priv1))
	fmt.Println("2026-03:", err)

	mu.Lock()
	published = set("2026-04", pub2)
	mu.Unlock()
	_, _, err = v.Verify(mint("2026-04", priv2))
	fmt.Println("2026-04 at once:", err)
	now = now.Add(time.Minute) // MinRefreshInterval
	_, _, err = v.Verify(mint("2026-04", priv2))
	fmt.Println("2026-04 a minute later:", err)
	_, _, err = v.Verify(mint("2026-03", priv1))
	fmt.Println("2026-03 after the rotation:", err)
	// Output:
	// 2026-03: <nil>
	// 2026-04 at once: token: invalid JWT: unknown kid
	// 2026-04 a minute later: <nil>
	// 2026-03 after the rotation: token: invalid JWT: unknown kid
}
