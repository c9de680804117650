package token_test

import (
	"context"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview62bJWTZeroClock: a JWTConfig.Now that reads the zero time (a
// mock clock never set up, a Now of a struct never started) is before
// every "exp": a token that expired years ago verifies. The confirm
// package treats such a reading as no clock at all and verifies nothing
// (confirm.ErrExpired); a verifier should not accept an expired token for
// it either.
func TestReview62bJWTZeroClock(t *testing.T) {
	k := newTestKeys(t)
	v := newJWT(t, token.JWTConfig{Keys: k.public(), Now: func() time.Time { return time.Time{} }})
	tok := sign(t, jwt.SigningMethodRS256, k.rsa, "rsa", claims(func(c jwt.MapClaims) {
		delete(c, "iat")
		c["exp"] = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	}))
	if pr, _, err := v.Verify(tok); err == nil {
		t.Errorf("a token that expired in 2020 verified on a clock reading the zero time: %+v", pr)
	}
}

// TestReview62bIntrospectorZeroClock: the Introspector, as the JWT
// verifier above, on a Now that reads the zero time accepts a token whose
// "exp" (from the endpoint's answer) passed years ago.
func TestReview62bIntrospectorZeroClock(t *testing.T) {
	e := newIntroEndpoint(t)
	e.answer(tokAnn, introAnswer(t, func(m map[string]any) {
		delete(m, "iat")
		delete(m, "nbf")
		m["exp"] = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	}))
	in, _ := newIntrospector(t, e, &clock{}, func(c *token.IntrospectionConfig) {
		c.Now = func() time.Time { return time.Time{} }
	})
	if pr, _, err := in.Introspect(context.Background(), tokAnn); err == nil {
		t.Errorf("a token that expired in 2020 was accepted on a clock reading the zero time: %+v", pr)
	}
}
