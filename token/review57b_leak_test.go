package token_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview57bUnjudgedAnswerNamesNoURL: the Verifier returned the error of
// a token it could not judge (its kid not in a set whose last fetch failed)
// as it was, and the go-sdk answers it 500 with its text, to a caller not
// yet authenticated: anyone sending a made-up kid during an outage read
// the JWK Set's URL and the fetch's failure (a status, a dial error naming
// an internal host). The answer says only that the token could not be
// checked; the error still unwraps to ErrKeySetUnavailable and keeps the
// cause for the log. (Found by the session's final read.)
func TestReview57bUnjudgedAnswerNamesNoURL(t *testing.T) {
	a := edKey(t)
	f := newRemote(t, jwks(t, jwk(t, "a", a.Public())), token.RemoteKeySetOptions{MinRefreshInterval: time.Minute})
	f.srv.set(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) })
	f.clock.advance(2 * time.Minute)
	tok := edToken(t, edKey(t), "attacker-made-up")
	h := auth.RequireBearerToken(f.v.Verifier(), nil)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	host := strings.TrimPrefix(f.srv.URL, "http://")
	if body := rec.Body.String(); strings.Contains(body, host) || strings.Contains(body, "jwks") || strings.Contains(body, "503") {
		t.Errorf("the answer to an unauthenticated caller names the set or its failure: %q", body)
	}
	_, err := f.v.Verifier()(context.Background(), tok, nil)
	if !errors.Is(err, token.ErrKeySetUnavailable) || errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("Verifier: %v; want ErrKeySetUnavailable, not ErrInvalidToken", err)
	}
	var cause interface{ Unwrap() error }
	if !errors.As(err, &cause) || !strings.Contains(cause.Unwrap().Error(), "status 503") {
		t.Errorf("Verifier: %v; want the fetch's failure kept in the error it wraps", err)
	}
}
