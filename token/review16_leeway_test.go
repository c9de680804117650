package token

import (
	"crypto"
	"crypto/ed25519"
	"strings"
	"testing"
	"time"
)

// TestLeewayBounded: a leeway over MaxLeeway is refused by both
// verifiers, naming the bound; MaxLeeway itself is accepted.
func TestLeewayBounded(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		leeway time.Duration
		ok     bool
	}{
		{0, true}, {MaxLeeway, true}, {MaxLeeway + time.Nanosecond, false}, {24 * time.Hour, false},
	} {
		_, err := NewJWT(JWTConfig{Keys: map[string]crypto.PublicKey{"k": pub}, Issuer: "https://issuer.example", Audience: "mcp", Leeway: tc.leeway})
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), "5m0s")) {
			t.Errorf("NewJWT with leeway %v: %v, want ok=%v (naming the bound)", tc.leeway, err, tc.ok)
		}
		_, err = NewIntrospector(IntrospectionConfig{Endpoint: "http://127.0.0.1:1/introspect", Audience: "mcp", Leeway: tc.leeway})
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), "5m0s")) {
			t.Errorf("NewIntrospector with leeway %v: %v, want ok=%v (naming the bound)", tc.leeway, err, tc.ok)
		}
	}
}
