package token_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview56BindSessionsLeeway: JWTConfig.Leeway (and
// IntrospectionConfig.Leeway) tells its user to give the go-sdk's
// RequireBearerTokenOptions.ClockSkew the same value, "or the go-sdk
// refuses a token within the leeway anyway"; BindSessions takes no
// options, and passed the go-sdk none, so a token its verifier accepted
// within its leeway (10 s past "exp", with a minute's leeway) was
// answered 401 "token expired" on every request, initialize included,
// while mcpguard.Bearer over the same verifier accepted it. The verifier
// judges the expiry; BindSessions refuses only a TokenInfo that expired
// more than MaxLeeway ago, which no verifier of this package accepts.
func TestReview56BindSessionsLeeway(t *testing.T) {
	now := time.Now()
	k := newTestKeys(t)
	v := newJWT(t, token.JWTConfig{Keys: k.public(), Leeway: time.Minute, Now: time.Now})
	tok := sign(t, jwt.SigningMethodRS256, k.rsa, "rsa", claims(func(c jwt.MapClaims) {
		c["iat"] = now.Add(-time.Hour).Unix()
		c["exp"] = now.Add(-10 * time.Second).Unix()
	}))
	if _, _, err := v.Verify(tok); err != nil {
		t.Fatalf("Verify of a token 10s past exp, with a minute's leeway: %v", err)
	}

	e := newIntroEndpoint(t)
	e.answer(tokAnn, introAnswer(t, func(m map[string]any) {
		m["iat"], m["nbf"], m["exp"] = now.Add(-time.Hour).Unix(), now.Add(-time.Hour).Unix(), now.Add(-10*time.Second).Unix()
	}))
	in, _ := newIntrospector(t, e, &clock{now: now}, func(c *token.IntrospectionConfig) {
		c.Now, c.Leeway = time.Now, time.Minute
	})

	for _, c := range []struct {
		name   string
		verify auth.TokenVerifier
		tok    string
	}{{"jwt", v.Verifier(), tok}, {"introspector", in.Verifier(), tokAnn}} {
		t.Run(c.name, func(t *testing.T) {
			var user string
			h := token.BindSessions(c.verify, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
					user = ti.UserID
				}
			}))
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.Header.Set("Authorization", "Bearer "+c.tok)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusOK || user == "" {
				t.Errorf("a token the verifier accepts within its leeway: status %d (%q), user %q; want 200 with its user",
					w.Code, w.Body.String(), user)
			}
		})
	}
}
