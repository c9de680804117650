package token_test

import (
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview35JWTLengthLimit pins the documented bound on a token's length
// ("at most 8 KiB long"): a correctly signed token of exactly 8192 bytes is
// verified, and one a byte or two longer (whichever length base64url can
// make) is refused as too long before it is parsed.
func TestReview35JWTLengthLimit(t *testing.T) {
	k := newTestKeys(t)
	v := newJWT(t, token.JWTConfig{Keys: k.public()})
	// Each byte of padding in the claims adds one or two bytes to the token,
	// so search for the pads that land on the limit and just beyond it.
	padded := func(pad int) string {
		return sign(t, jwt.SigningMethodRS256, k.rsa, "rsa", claims(func(c jwt.MapClaims) {
			c["pad"] = strings.Repeat("x", pad)
		}))
	}
	guess := (8192 - len(padded(0))) * 3 / 4
	byLen := map[int]string{}
	for pad := guess - 8; pad <= guess+8; pad++ {
		tok := padded(pad)
		byLen[len(tok)] = tok
	}
	at, ok := byLen[8192]
	if !ok {
		t.Fatal("no pad gave a token of 8192 bytes")
	}
	if p, _, err := v.Verify(at); err != nil || p.Subject != "alice" {
		t.Errorf("token of 8192 bytes: Verify = %v, %v; want alice, nil", p, err)
	}
	over, ok := byLen[8193]
	if !ok {
		over = byLen[8194]
	}
	if over == "" {
		t.Fatal("no pad gave a token of 8193 or 8194 bytes")
	}
	_, _, err := v.Verify(over)
	checkRefusal(t, err, over, "longer than 8192 bytes")
}
