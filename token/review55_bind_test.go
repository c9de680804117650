package token_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview55BindSessionsAnyVerifier: only a static Table could bind MCP
// sessions to their openers (Table.BindSessions); a server verifying JWTs
// or introspecting tokens wrote the wrapper itself. BindSessions takes any
// TokenVerifier and verifies each token once: a request whose token it
// accepts reaches the handler with that TokenInfo (the go-sdk binds the
// session to its UserID), one without a token or with a token it refuses
// reaches the handler without one (the guard refuses and audits it), and a
// TokenInfo that has expired is refused by the go-sdk.
func TestReview55BindSessionsAnyVerifier(t *testing.T) {
	var calls atomic.Int64
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		calls.Add(1)
		switch {
		case strings.HasPrefix(tok, "good-"):
			return &auth.TokenInfo{UserID: strings.TrimPrefix(tok, "good-"), Expiration: time.Now().Add(time.Hour)}, nil
		case tok == "static":
			return &auth.TokenInfo{UserID: "svc"}, nil // no Expiration: does not expire
		case tok == "stale":
			return &auth.TokenInfo{UserID: "old", Expiration: time.Now().Add(-token.MaxLeeway - time.Minute)}, nil // past any leeway (TestReview56BindSessionsLeeway)
		}
		return nil, errors.Join(auth.ErrInvalidToken, errors.New("unknown"))
	}
	var seen atomic.Pointer[string]
	h := token.BindSessions(verify, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := "<none>"
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
			user = ti.UserID
		}
		seen.Store(&user)
	}))
	for _, c := range []struct {
		authz, want string
		status      int
	}{
		{"", "<none>", http.StatusOK},
		{"Bearer bad", "<none>", http.StatusOK},
		{"Basic Z29vZC1hbm46", "<none>", http.StatusOK},
		{"Bearer good-ann", "ann", http.StatusOK},
		{"bearer good-sam", "sam", http.StatusOK},
		{"Bearer static", "svc", http.StatusOK},
		{"Bearer stale", "", http.StatusUnauthorized},
	} {
		seen.Store(nil)
		calls.Store(0)
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		if c.authz != "" {
			r.Header.Set("Authorization", c.authz)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		got := ""
		if p := seen.Load(); p != nil {
			got = *p
		}
		if w.Code != c.status || got != c.want {
			t.Errorf("Authorization %q: status %d, the handler saw user %q; want %d and %q", c.authz, w.Code, got, c.status, c.want)
		}
		if n := calls.Load(); strings.HasPrefix(c.authz, "Bearer") || strings.HasPrefix(c.authz, "bearer") {
			if n != 1 {
				t.Errorf("Authorization %q: the token was verified %d times, want once", c.authz, n)
			}
		} else if n != 0 {
			t.Errorf("Authorization %q: verified %d times without a bearer token", c.authz, n)
		}
	}
}
