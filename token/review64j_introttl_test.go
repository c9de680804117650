package token_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview64jIntrospectCacheFromAsking: IntrospectionConfig.CacheTTL
// says "a token the authorization server revokes is accepted for up to
// this long". The cached answer's lifetime was counted from when the
// answer arrived, not from when the endpoint was asked: an answer that
// took a while to come (up to Timeout, which has no upper bound) was
// reused for CacheTTL after that, so a token revoked just after the
// endpoint judged it was accepted for CacheTTL plus the request's time.
// Here the endpoint judges the token active at T, the token is revoked at
// T+1s, the answer arrives at T+5s: at T+62s, 61 s after the revocation
// with a CacheTTL of 60 s, the token must not be accepted from the cache.
func TestReview64jIntrospectCacheFromAsking(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := t0
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(t time.Time) { mu.Lock(); defer mu.Unlock(); now = t }

	var revoked atomic.Bool
	var asked atomic.Int32
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if revoked.Load() {
			io.WriteString(w, `{"active":false}`)
			return
		}
		// Judged active now (T); revoked at T+1s; the answer arrives at T+5s.
		answer := fmt.Sprintf(`{"active":true,"sub":"ann","aud":"mcp","exp":%d}`, t0.Add(time.Hour).Unix())
		revoked.Store(true)
		set(t0.Add(5 * time.Second))
		io.WriteString(w, answer)
	}))
	t.Cleanup(as.Close)
	in, err := token.NewIntrospector(token.IntrospectionConfig{
		Endpoint: as.URL, Audience: "mcp", CacheTTL: time.Minute, NegativeCacheTTL: -1,
		Now: clock, ErrorHandler: func(error) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := in.Introspect(context.Background(), "opaque-1"); err != nil {
		t.Fatalf("the first lookup, judged active: %v", err)
	}
	set(t0.Add(62 * time.Second)) // 61 s after the revocation
	pr, _, err := in.Introspect(context.Background(), "opaque-1")
	if err == nil {
		t.Errorf("61 s after its revocation, with CacheTTL 1m, the token was accepted from the cache (as %q; endpoint asked %d time(s))",
			pr.Subject, asked.Load())
	}
}
