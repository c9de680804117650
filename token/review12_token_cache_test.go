package token_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview12RemoteKeySetNoStore: a JWK Set answered with Cache-Control
// no-store or no-cache (RFC 9111, sections 5.2.2.4 and 5.2.2.5: not to be
// reused without asking the server again), in any case, qualified or not,
// on any of several header lines, and whatever max-age comes with it, is
// used for MinRefreshInterval only, as max-age=0 is: the shortest time
// allowed, never a fetch per verification.
func TestReview12RemoteKeySetNoStore(t *testing.T) {
	a := edKey(t)
	set := jwks(t, jwk(t, "a", a.Public()))
	for _, tc := range []struct {
		name         string
		cacheControl []string // header lines
		minInterval  time.Duration
		fresh        time.Duration // the set's lifetime
	}{
		{"no_store", []string{"no-store"}, 0, time.Minute},
		{"no_cache", []string{"no-cache"}, 0, time.Minute},
		{"upper_case", []string{"NO-STORE"}, 0, time.Minute},
		{"no_cache_qualified", []string{`private, no-cache="Set-Cookie"`}, 0, time.Minute},
		{"no_store_after_max_age", []string{"public, max-age=3600, no-store"}, 0, time.Minute},
		{"no_store_before_malformed_max_age", []string{"no-store, max-age=soon"}, 0, time.Minute},
		{"no_cache_on_second_line", []string{"max-age=3600", "no-cache"}, 0, time.Minute},
		{"no_store_longer_interval", []string{"no-store"}, 5 * time.Minute, 5 * time.Minute},
		{"max_age_zero", []string{"max-age=0"}, 0, time.Minute},
		{"must_revalidate_is_not_no_cache", []string{"max-age=600, must-revalidate"}, 0, 10 * time.Minute},
		{"no_transform_is_not_no_store", []string{"no-transform"}, 0, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRemote(t, set, token.RemoteKeySetOptions{MinRefreshInterval: tc.minInterval})
			f.srv.set(func(w http.ResponseWriter, r *http.Request) {
				for _, v := range tc.cacheControl {
					w.Header().Add("Cache-Control", v)
				}
				w.Write(set)
			})
			// The first fetch had no header; this one has.
			f.clock.advance(max(tc.minInterval, time.Minute))
			f.refused(t, "unknown kid", edToken(t, a, "x"), "unknown kid")
			f.fetches(t, "the refetch", 2)
			// Inside the interval, neither known nor made-up kids fetch.
			for i := range 20 {
				f.ok(t, "key a, fresh", edToken(t, a, "a"))
				f.refused(t, "made-up kid, fresh", edToken(t, a, fmt.Sprint("y", i)), "unknown kid")
			}
			f.fetches(t, "40 verifications right after the refetch", 2)
			f.clock.advance(tc.fresh - time.Second)
			for range 20 {
				f.ok(t, "key a, fresh", edToken(t, a, "a"))
			}
			f.fetches(t, "just before the set's expiry", 2)
			f.clock.advance(time.Second)
			f.ok(t, "key a, due", edToken(t, a, "a"))
			f.ok(t, "key a, again", edToken(t, a, "a"))
			f.fetches(t, "at the set's expiry", 3)
		})
	}
}
