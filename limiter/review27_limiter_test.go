package limiter_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview27LongWindowBurstFits: a burst of exactly Max units fits a full
// bucket, whatever the window ([limiter.Limit]: the time a call takes is
// rounded down). On windows past 2^52 ns (52 days) the memory store's
// Window*n/Max, in float64, could round up past the next nanosecond: a
// call costing exactly Max of a 90-day spend limit took more than the
// window and was refused for ever (RetryAfter 0), and the 11th call of a
// rate limit of 11 a year was refused for a nanosecond.
func TestReview27LongWindowBurstFits(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	cases := []struct {
		name  string
		limit limiter.Limit
		req   limiter.Request
		times int
	}{
		{"spend_max_in_one_call_90_days", limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 2755.2, Window: 90 * 24 * time.Hour},
			limiter.Request{Session: "s", Cost: 2755.2}, 1},
		{"spend_max_in_one_call_a_year", limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 5685.9, Window: 365 * 24 * time.Hour},
			limiter.Request{Session: "s", Cost: 5685.9}, 1},
		{"rate_11_a_year", limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 11, Window: 365 * 24 * time.Hour},
			limiter.Request{Session: "s", Calls: 1}, 11},
		{"rate_max_in_one_call_50_years", limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 7, Window: limiter.MaxWindow - 77},
			limiter.Request{Session: "s", Calls: 7}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, via := range []string{"memory", "apply"} {
				opts := &limiter.Options{Store: limiter.NewMemoryStore()}
				if via == "apply" {
					opts.Store = limiter.StoreFunc(opts.Store.Apply)
				}
				l, err := limiter.New([]limiter.Limit{tc.limit}, opts)
				if err != nil {
					t.Fatal(err)
				}
				for i := range tc.times {
					d := l.AllowAt(context.Background(), t0, tc.req)
					if !d.Allowed {
						t.Errorf("%s: call %d of %d of %+v under %v on a full bucket: denied by %v, retry %v; want allowed",
							via, i+1, tc.times, tc.req, tc.limit, d.Limit, d.RetryAfter)
					}
				}
				// The bucket is spent: one more unit waits.
				d := l.AllowAt(context.Background(), t0, limiter.Request{Session: "s", Calls: 1, Cost: 1})
				if d.Allowed {
					t.Errorf("%s: a call after the burst of Max was allowed", via)
				}
			}
		})
	}
}
