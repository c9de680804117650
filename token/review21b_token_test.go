package token_test

import (
	"crypto"
	"crypto/ed25519"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview21bTableNullRoles: "roles" written null (a template's unset
// list) is refused as "sub" and "role" are, not read as no roles; an
// empty list, written on purpose, still means none.
func TestReview21bTableNullRoles(t *testing.T) {
	for _, table := range []string{
		`{"tok-a":{"sub":"alice","roles":null}}`,
		`{"tok-a":{"sub":"alice","role":"viewer","roles":null}}`,
	} {
		if _, err := token.Parse([]byte(table)); err == nil || !strings.Contains(err.Error(), `"roles" is null`) || strings.Contains(err.Error(), "tok-a") {
			t.Errorf("Parse(%s) = %v, want an error saying \"roles\" is null, not quoting the token", table, err)
		}
	}
	if _, err := token.Parse([]byte(`{"tok-a":{"sub":"alice","roles":[]}}`)); err != nil {
		t.Errorf("Parse with \"roles\":[] = %v, want a table", err)
	}
}

// TestReview21bEd25519RegistryElsewhere: NewJWT registers "Ed25519" with
// the jwt package for the whole process. Another parser, without
// WithValidMethods, whose key function checks the method's type (as the
// jwt package's examples do) or returns a key of another type refuses an
// "Ed25519" token; one that returns an Ed25519 key without a check
// verifies it only with that key's signature, as it verifies "EdDSA".
func TestReview21bEd25519RegistryElsewhere(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pub := priv.Public().(ed25519.PublicKey)
	newJWT(t, token.JWTConfig{Keys: map[string]crypto.PublicKey{"ed": pub}}) // registers
	tok := signRaw(t, "Ed25519", "ed", priv)
	k := newTestKeys(t)
	for _, tt := range []struct {
		name string
		key  jwt.Keyfunc
	}{
		{"checks_eddsa_type", func(t *jwt.Token) (any, error) {
			if _, ok := t.Method.(*jwt.SigningMethodEd25519); !ok {
				return nil, errors.New("unexpected method")
			}
			return pub, nil
		}},
		{"checks_eddsa_name", func(t *jwt.Token) (any, error) {
			if t.Method.Alg() != "EdDSA" {
				return nil, errors.New("unexpected method")
			}
			return pub, nil
		}},
		{"hmac_secret", func(*jwt.Token) (any, error) { return []byte("secret"), nil }},
		{"rsa_key", func(*jwt.Token) (any, error) { return &k.rsa.PublicKey, nil }},
		{"other_ed25519_key", func(*jwt.Token) (any, error) {
			other, _, _ := ed25519.GenerateKey(nil)
			return other, nil
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := jwt.Parse(tok, tt.key, jwt.WithoutClaimsValidation()); err == nil {
				t.Fatal("jwt.Parse without WithValidMethods accepted the Ed25519 token")
			}
		})
	}
	// The claims carry the tests' clock: only the signature is checked.
	if _, err := jwt.Parse(tok, func(*jwt.Token) (any, error) { return pub, nil }, jwt.WithoutClaimsValidation()); err != nil {
		t.Fatalf("jwt.Parse with the signer's key: %v", err)
	}
}

// TestReview21bNewJWTRace: NewJWT registering the method while tokens
// are verified (with this package and the jwt package directly) is safe
// (run with -race).
func TestReview21bNewJWTRace(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pub := priv.Public()
	tok := signRaw(t, "Ed25519", "ed", priv)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			v, err := token.NewJWT(token.JWTConfig{Issuer: "https://issuer.example", Audience: "mcp", Keys: map[string]crypto.PublicKey{"ed": pub}})
			if err != nil {
				t.Error(err)
				return
			}
			_, _, _ = v.Verify(tok)
			_, _ = jwt.Parse(tok, func(*jwt.Token) (any, error) { return pub, nil })
		})
	}
	wg.Wait()
}
