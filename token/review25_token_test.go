package token_test

import (
	"context"
	"testing"
	"time"
)

// TestReview25IntrospectorClockGoesBack: a cached answer is reused for at
// most CacheTTL (or NegativeCacheTTL), "never past exp", measured on
// IntrospectionConfig.Now, which need not be monotonic (a Now that strips
// time.Now's monotonic reading follows the wall clock, which NTP or an
// operator may step back; and an acceptance cached until its "exp" was
// held until a wall time even with time.Now). After a step back past the
// moment an answer was cached, the Introspector cannot tell how long ago
// that was: it must ask again, as a RemoteKeySet fetches again
// (TestReview12RemoteKeySetClockGoesBack). It kept the answer until the
// clock caught up, so that a token the authorization server had revoked
// was accepted for a day after a day's step.
func TestReview25IntrospectorClockGoesBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		exp  time.Duration // from testNow
	}{
		{"cached_for_ttl", time.Hour},
		{"cached_until_exp", 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newIntroEndpoint(t)
			e.answer(tokAnn, introAnswer(t, func(m map[string]any) {
				m["exp"] = testNow.Add(tc.exp).Unix()
				m["iat"] = testNow.Add(-48 * time.Hour).Unix()
				m["nbf"] = testNow.Add(-48 * time.Hour).Unix()
			}))
			clk := &clock{now: testNow}
			i, _ := newIntrospector(t, e, clk, nil)
			if _, _, err := i.Introspect(context.Background(), tokAnn); err != nil {
				t.Fatalf("Introspect: %v", err)
			}
			// The authorization server revokes the token; the clock steps
			// back a day.
			e.answer(tokAnn, `{"active": false}`)
			clk.advance(-24 * time.Hour)
			_, _, err := i.Introspect(context.Background(), tokAnn)
			if err == nil {
				t.Errorf("a revoked token accepted after the clock stepped back a day (the cached answer, %d requests)", e.count(tokAnn))
			} else {
				checkIntroRefusal(t, err, "inactive")
			}
			if n := e.count(tokAnn); n != 2 {
				t.Errorf("the endpoint was asked %d times, want 2 (again after the step back)", n)
			}
			// From then on the cache works from the new reading.
			clk.advance(5 * time.Second)
			if _, _, err := i.Introspect(context.Background(), tokAnn); err == nil {
				t.Error("the revoked token accepted")
			}
			if n := e.count(tokAnn); n != 2 {
				t.Errorf("the endpoint was asked %d times, want 2 (the refusal cached)", n)
			}
		})
	}
}
