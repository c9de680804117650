package limiter_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview22AboveMaxNeverFits: a call taking more units than a limit's
// Max never fits ([limiter.Limit]: a bucket holds at most Max units; a
// denial for it has a RetryAfter of zero, and a Batch's is negative). The
// in-memory store decided "never" on the rounded-down increment instead,
// so a call a few millionths above Max took a full bucket, on the fast path
// and through Apply alike.
func TestReview22AboveMaxNeverFits(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	cases := []struct {
		name  string
		limit limiter.Limit
		req   limiter.Request
	}{
		{"spend", limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 10, Window: time.Millisecond},
			limiter.Request{Session: "s", Cost: 10.000005}},
		{"rate", limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 1.9999999, Window: time.Millisecond},
			limiter.Request{Session: "s", Calls: 2}},
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
				d := l.AllowAt(context.Background(), t0, tc.req)
				if d.Allowed || d.Limit != tc.limit || d.RetryAfter != 0 {
					t.Errorf("%s: AllowAt(%+v) under %v on a full bucket = allowed %v, limit %v, retry %v; want denied by it, retry 0",
						via, tc.req, tc.limit, d.Allowed, d.Limit, d.RetryAfter)
				}
				l.Release(d)
			}
			n := tc.req.Cost
			if tc.limit.Kind == limiter.Rate {
				n = float64(tc.req.Calls)
			}
			b := &limiter.Batch{Checks: []limiter.Check{{ID: tc.limit.ID(), Key: "b", Kind: tc.limit.Kind, Max: tc.limit.Max, Window: tc.limit.Window, N: n}}}
			if err := limiter.NewMemoryStore().Apply(context.Background(), t0, b); err != nil {
				t.Fatal(err)
			}
			if b.Denied != 0 || b.RetryAfter >= 0 {
				t.Errorf("Apply of N %v against Max %v: Denied %d, RetryAfter %v; want 0 and negative", n, tc.limit.Max, b.Denied, b.RetryAfter)
			}
		})
	}
}
