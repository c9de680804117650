package token_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpguard/mcpguard/token"
)

// notJudged, as the refusal checkRefusal wants, wants an error that says
// the token was not judged (see unjudged).
const notJudged = "(not judged: ErrKeySetUnavailable)"

// unjudged checks that err says the token was not judged (its key set
// could not be fetched), not that it is invalid: a client told 401
// invalid_token refreshes its token, in vain while the set is down.
func unjudged(t *testing.T, what string, err error, tok string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: accepted, want not judged", what)
	case errors.Is(err, token.ErrInvalidJWT), errors.Is(err, auth.ErrInvalidToken):
		t.Errorf("%s: %v, a refusal (invalid token), want not judged (the JWK Set is down)", what, err)
	case !errors.Is(err, token.ErrKeySetUnavailable):
		t.Errorf("%s: %v, does not unwrap to ErrKeySetUnavailable", what, err)
	case tok != "" && strings.Contains(err.Error(), tok):
		t.Errorf("%s: the error quotes the token", what)
	}
}

// TestReview57UnknownKidWhileKeySetDown: a token signed with a key the
// provider has just rotated in, whose kid the set lacks while the JWK Set
// URL cannot be fetched, is not judged (not refused as an unknown kid),
// through Verify, Authenticate, the Verifier and the go-sdk's
// RequireBearerToken (no 401 invalid_token); nor are made-up kids inside
// the interval after the failed fetch, which still start no fetch; once
// the set is fetched again, the new key verifies and a made-up kid is
// refused as unknown.
func TestReview57UnknownKidWhileKeySetDown(t *testing.T) {
	a, b := edKey(t), edKey(t)
	f := newRemote(t, jwks(t, jwk(t, "a", a.Public())), token.RemoteKeySetOptions{MinRefreshInterval: time.Minute})
	f.srv.set(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	})
	f.clock.advance(2 * time.Minute)
	tokB := edToken(t, b, "b")

	_, _, err := f.v.Verify(tokB)
	unjudged(t, "Verify, the set down", err, tokB)
	f.fetches(t, "the kid b, the set down", 2)
	if err != nil && !strings.Contains(err.Error(), "status 503") {
		t.Errorf("Verify, the set down: %q, want it to give the fetch's failure (status 503)", err)
	}
	_, err = f.v.Authenticate(context.Background(), tokB)
	unjudged(t, "Authenticate, the set down", err, tokB)
	_, err = f.v.Verifier()(context.Background(), tokB, nil)
	unjudged(t, "Verifier, the set down", err, tokB)

	// The go-sdk answers a verifier's refusal 401 with invalid_token, any
	// other failure 500.
	h := auth.RequireBearerToken(f.v.Verifier(), nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the handler ran")
	}))
	req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+tokB)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code == http.StatusUnauthorized {
		t.Errorf("RequireBearerToken, the set down: 401 (WWW-Authenticate %q), want the failure of a check (500)", rec.Header().Get("WWW-Authenticate"))
	}

	// Inside the interval: no fetch, whatever the kids, and no verdict.
	for i := range 20 {
		tok := edToken(t, a, fmt.Sprintf("made-up-%d", i))
		_, _, err := f.v.Verify(tok)
		unjudged(t, "a made-up kid inside the interval, the last fetch failed", err, tok)
	}
	f.fetches(t, "made-up kids inside the interval", 2)
	f.ok(t, "the known key a, the set down", edToken(t, a, "a"))

	f.srv.serve(jwks(t, jwk(t, "a", a.Public()), jwk(t, "b", b.Public())), "")
	f.clock.advance(time.Minute)
	f.ok(t, "the kid b once the set is back", tokB)
	f.fetches(t, "the set back", 3)
	f.refused(t, "a made-up kid after a good fetch", edToken(t, a, "made-up"), "unknown kid")
	f.fetches(t, "a made-up kid after a good fetch", 3)
}

// TestReview57KeyLookupCutShort: a lookup whose context ends while it
// waits for the fetch its unknown kid started did not judge the token:
// the error unwraps to ErrKeySetUnavailable and the context's error, not
// to ErrInvalidJWT.
func TestReview57KeyLookupCutShort(t *testing.T) {
	a, b := edKey(t), edKey(t)
	f := newRemote(t, jwks(t, jwk(t, "a", a.Public())), token.RemoteKeySetOptions{Timeout: 5 * time.Second})
	release := make(chan struct{})
	defer close(release)
	f.srv.set(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	f.clock.advance(2 * time.Minute)
	tokB := edToken(t, b, "b")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := f.v.Authenticate(ctx, tokB)
	unjudged(t, "a lookup cut short by its context", err, tokB)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a lookup cut short by its context: %v, does not unwrap to context.DeadlineExceeded", err)
	}
}
