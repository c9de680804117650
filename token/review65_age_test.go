package token_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview65RemoteKeySetAge: a JWK Set served from a cache (a CDN in
// front of the provider) with "max-age=3600" and "Age: 3000" has ten
// minutes of its lifetime left (RFC 9111, 4.2.3), not an hour: the
// provider's rotation (a key withdrawn) reached the gateway up to 50
// minutes late. An invalid Age is ignored, as caches do.
func TestReview65RemoteKeySetAge(t *testing.T) {
	a := edKey(t)
	set := jwks(t, jwk(t, "a", a.Public()))
	for _, tc := range []struct {
		name  string
		age   string
		fresh time.Duration
	}{
		{"aged", "3000", 10 * time.Minute},
		{"past_its_lifetime", "7200", time.Minute}, // MinRefreshInterval
		{"invalid", "-5", time.Hour},
		{"not_a_number", "soon", time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRemote(t, set, token.RemoteKeySetOptions{})
			f.srv.set(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Cache-Control", "public, max-age=3600")
				w.Header().Set("Age", tc.age)
				w.Header().Set("Content-Type", "application/jwk-set+json")
				w.Write(set)
			})
			f.clock.advance(time.Minute)
			f.refused(t, "unknown kid", edToken(t, a, "x"), "unknown kid")
			f.fetches(t, "the refetch", 2)
			f.clock.advance(tc.fresh - time.Second)
			f.ok(t, "key a, fresh", edToken(t, a, "a"))
			f.fetches(t, "just before the set's expiry", 2)
			f.clock.advance(time.Second)
			f.ok(t, "key a, due", edToken(t, a, "a"))
			f.fetches(t, "at the set's expiry", 3)
		})
	}
}
