package token_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview18bKeysLeftOutCounted: the report of a fetched JWK Set says
// how many keys it left out, and now that it lists ten of them, that
// number is the only exact one. A kid listed twice leaves both copies out,
// but only the second had an error of its own, so the first copy, when it
// was a usable key, went uncounted: the set below leaves four keys out and
// was reported as "3 keys left out". Keys both bad and listed twice count
// once each, and past ten, "and N more" counts the entries not listed.
func TestReview18bKeysLeftOutCounted(t *testing.T) {
	a, b := edKey(t), edKey(t)
	t.Run("duplicates", func(t *testing.T) {
		f := newRemote(t, jwks(t,
			jwk(t, "a", a.Public()),
			jwk(t, "b", b.Public()), jwk(t, "b", b.Public()), // both left out
			map[string]any{"kty": "oct-x", "kid": "c"}, map[string]any{"kty": "oct-x", "kid": "c"}, // bad, and listed twice
		), token.RemoteKeySetOptions{})
		f.ok(t, "key a", edToken(t, a, "a"))
		f.refused(t, "key b, listed twice", edToken(t, b, "b"), "unknown kid")
		errs := f.errs.all()
		if len(errs) != 1 {
			t.Fatalf("%d reports, want 1: %v", len(errs), errs)
		}
		msg := errs[0].Error()
		if !strings.Contains(msg, "4 keys left out, 1 kept") {
			t.Errorf("report %q: want \"4 keys left out, 1 kept\"", msg)
		}
		if n := strings.Count(msg, "\n") + 1; n != 4 {
			t.Errorf("report lists %d keys after its first line, want 4 (one per key left out):\n%s", n, msg)
		}
	})
	t.Run("more_than_listed", func(t *testing.T) {
		keys := []map[string]any{jwk(t, "a", a.Public())}
		for n := range 12 { // 24 keys left out
			kid := fmt.Sprint("d", n)
			keys = append(keys, jwk(t, kid, b.Public()), jwk(t, kid, b.Public()))
		}
		f := newRemote(t, jwks(t, keys...), token.RemoteKeySetOptions{})
		f.ok(t, "key a", edToken(t, a, "a"))
		errs := f.errs.all()
		if len(errs) != 1 {
			t.Fatalf("%d reports, want 1: %v", len(errs), errs)
		}
		msg := errs[0].Error()
		for _, want := range []string{"24 keys left out, 1 kept", "and 14 more"} {
			if !strings.Contains(msg, want) {
				t.Errorf("report %q: lacks %q", msg, want)
			}
		}
	})
}

// TestReview18bDefaultIntervalNamed: since MinRefreshInterval may not be
// over MaxAge, a MaxAge under a minute given alone is refused, for the
// default interval of one minute; the error named "MinRefreshInterval
// 1m0s" as though the caller had set it. It now says the interval is the
// default, and that setting it is the way out; an interval given over the
// default MaxAge is said to be over the default too.
func TestReview18bDefaultIntervalNamed(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts token.RemoteKeySetOptions
		want string
	}{
		{"max_age_alone", token.RemoteKeySetOptions{MaxAge: 30 * time.Second}, "MinRefreshInterval 1m0s (the default, for a zero MinRefreshInterval) over MaxAge 30s"},
		{"interval_alone", token.RemoteKeySetOptions{MinRefreshInterval: 2 * time.Hour}, "MinRefreshInterval 2h0m0s over MaxAge 1h0m0s (the default, for a zero MaxAge)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := token.NewRemoteKeySet(context.Background(), "https://idp.example/keys", &tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewRemoteKeySet(%+v): err %v, want one that says %q", tc.opts, err, tc.want)
			}
		})
	}
}
