package token_test

import (
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpguard/mcpguard/token"
)

// TestJWTRefusesSenderConstrained: a JWT carrying "cnf" (bound to a key or
// a certificate: RFC 8705 mTLS, RFC 9449 DPoP) is refused, as an
// introspection answer with "cnf" is: it is valid only with a proof of
// that key, which a bearer verifier cannot check, so accepting it would
// make a stolen token usable. The same token without "cnf" passes.
func TestJWTRefusesSenderConstrained(t *testing.T) {
	k := newTestKeys(t)
	v := newJWT(t, token.JWTConfig{Keys: k.public()})
	plain := sign(t, jwt.SigningMethodEdDSA, k.ed, "ed", claims(nil))
	if _, _, err := v.Verify(plain); err != nil {
		t.Fatalf("the token without cnf: %v", err)
	}
	for _, cnf := range map[string]any{
		"dpop": map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"},
		"mtls": map[string]any{"x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"},
		"null": nil,
	} {
		tok := sign(t, jwt.SigningMethodEdDSA, k.ed, "ed", claims(func(c jwt.MapClaims) { c["cnf"] = cnf }))
		_, _, err := v.Verify(tok)
		checkRefusal(t, err, tok, "cnf")
	}
}
