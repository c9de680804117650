package token_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview18MinRefreshOverMaxAgeRefused: the interval between fetches
// holds back the fetch that MaxAge makes due, so with a MinRefreshInterval
// longer than MaxAge a key the provider removed (a leaked one, say) went on
// verifying tokens for the whole interval, not for MaxAge as documented,
// and a Cache-Control max-age even lengthened the set's life past MaxAge.
// NewRemoteKeySet and DiscoverKeySet refuse such options, the defaults
// included (MaxAge 30s alone is under the one-minute interval), before any
// request; equal durations are accepted.
func TestReview18MinRefreshOverMaxAgeRefused(t *testing.T) {
	a := edKey(t)
	srv := newJWKSServer(t, jwks(t, jwk(t, "a", a.Public())))
	idp := newIDPServer(t)
	idp.route(oidcPath, serveJSON(t, metadata(idp.URL, srv.URL+"/keys")))
	for _, tc := range []struct {
		name string
		opts token.RemoteKeySetOptions
	}{
		{"both_set", token.RemoteKeySetOptions{MinRefreshInterval: 2 * time.Hour, MaxAge: time.Hour}},
		{"interval_over_default_max_age", token.RemoteKeySetOptions{MinRefreshInterval: 2 * time.Hour}},
		{"max_age_under_default_interval", token.RemoteKeySetOptions{MaxAge: 30 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, docs := srv.count(), len(idp.requested())
			if _, err := token.NewRemoteKeySet(context.Background(), srv.URL+"/keys", &tc.opts); err == nil || !strings.Contains(err.Error(), "MinRefreshInterval") || !strings.Contains(err.Error(), "over MaxAge") {
				t.Errorf("NewRemoteKeySet(%+v): err %v, want the options refused", tc.opts, err)
			}
			if _, err := token.DiscoverKeySet(context.Background(), idp.URL, &tc.opts); err == nil || !strings.Contains(err.Error(), "over MaxAge") {
				t.Errorf("DiscoverKeySet(%+v): err %v, want the options refused", tc.opts, err)
			}
			if n, m := srv.count()-before, len(idp.requested())-docs; n != 0 || m != 0 {
				t.Errorf("refused options: %d fetches of the set, %d reads of the document; want none", n, m)
			}
		})
	}

	// Equal durations, and a short MaxAge with a shorter interval, work:
	// the set is fetched again once MaxAge has passed.
	for _, o := range []token.RemoteKeySetOptions{
		{MinRefreshInterval: time.Hour, MaxAge: time.Hour},
		{MinRefreshInterval: 10 * time.Second, MaxAge: 30 * time.Second},
	} {
		f := newRemote(t, jwks(t, jwk(t, "a", a.Public())), o)
		f.clock.advance(o.MaxAge)
		f.ok(t, "key a at MaxAge", edToken(t, a, "a"))
		f.fetches(t, "at MaxAge", 2)
	}
}
