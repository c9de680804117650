package token_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview63VerifyAfterRestart: a verifier's replay memory is its
// process's, so a signed request a run accepted was accepted again by the
// next run, started within MaxSkew of the signature's time (63f: a refund
// paid twice). A signature timed before Verify made its handler is now
// refused; one timed at its start or after is accepted, once.
func TestReview63VerifyAfterRestart(t *testing.T) {
	s := gwSigner(t, gwKey1)
	t0 := time.Unix(1767225600, 0)
	clock := t0
	opts := &token.GatewayVerifyOptions{Now: func() time.Time { return clock }, Logger: slog.New(slog.DiscardHandler)}
	serve := func(h http.Handler, r *http.Request) int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	signed := func(at time.Time) *http.Request { return gwRequest(s, at, "{}") }
	first := s.Verify(&gwNext{}, opts)
	clock = t0.Add(5 * time.Second)
	old := gwRequest(s, clock, "{}")
	replay := old.Header.Clone()
	if got := serve(first, old); got != http.StatusNoContent {
		t.Fatalf("first run: %d", got)
	}
	// The downstream restarts 10 s later: a new handler, a new memory.
	clock = t0.Add(15 * time.Second)
	second := s.Verify(&gwNext{}, opts)
	again := httptest.NewRequest(http.MethodPost, "/mcp?a=1", strings.NewReader("{}"))
	again.Header = replay
	if got := serve(second, again); got != http.StatusUnauthorized {
		t.Errorf("a replay after the restart, of a request signed before it: %d, want 401", got)
	}
	if got := serve(second, signed(clock)); got != http.StatusNoContent {
		t.Errorf("a request signed at the restart: %d, want 204", got)
	}
	clock = clock.Add(time.Second)
	fresh := signed(clock)
	dup := fresh.Header.Clone()
	if got := serve(second, fresh); got != http.StatusNoContent {
		t.Errorf("a request signed after the restart: %d, want 204", got)
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp?a=1", strings.NewReader("{}"))
	r.Header = dup
	if got := serve(second, r); got != http.StatusUnauthorized {
		t.Errorf("its replay: %d, want 401", got)
	}
}
