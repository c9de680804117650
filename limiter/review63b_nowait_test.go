package limiter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview63bDenialWithoutWait: a store of the user's that denies a
// Rate or Spend check the call fits in (N no more than Max) with no wait,
// RetryAfter zero (a wait rounded down to its resolution, say: "now") or
// negative (its "never"), answers outside the Batch contract, where zero is
// only for Concurrency denials and negative only for an N above Max (and a
// wait for such an N, which no wait lets through, is outside it too). The
// Limiter passed it on as a Decision with RetryAfter zero and no Err, which
// says "waiting alone cannot help" (the call costs more than the limit
// holds): the guard then told the client its call was not retryable, the
// spend limit's that it "costs more than the spend limit allows", both
// false. Such an answer is now a failed decision (Err, not allowed), as a
// Denied out of range is; an answer within the contract (a wait, or a call
// above Max) is read as before.
func TestReview63bDenialWithoutWait(t *testing.T) {
	now := time.Unix(1e9, 0)
	lims := []limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Max: 10, Window: time.Hour},
		{Kind: limiter.Spend, Scope: limiter.User, Max: 100, Window: time.Hour},
	}
	for _, tc := range []struct {
		name  string
		kind  limiter.Kind
		cost  float64
		wait  time.Duration
		fails bool // the answer is outside the contract
	}{
		{"rate, zero wait", limiter.Rate, 1, 0, true},
		{"rate, never", limiter.Rate, 1, -1, true},
		{"spend, zero wait", limiter.Spend, 1, 0, true},
		{"spend, never", limiter.Spend, 1, -1, true},
		{"spend above max, a wait", limiter.Spend, 101, time.Minute, true},
		{"spend above max, never", limiter.Spend, 101, -1, false},
		{"rate, a wait", limiter.Rate, 1, time.Minute, false},
	} {
		store := limiter.StoreFunc(func(_ context.Context, _ time.Time, b *limiter.Batch) error {
			if b.Release || b.Refund {
				return nil
			}
			b.Denied = -1
			for i, c := range b.Checks {
				if c.Kind == tc.kind {
					b.Denied = i
				}
			}
			b.RetryAfter = tc.wait
			return nil
		})
		l, err := limiter.New(lims, &limiter.Options{Store: store})
		if err != nil {
			t.Fatal(err)
		}
		d := l.AllowAt(context.Background(), now, limiter.Request{User: "u", Tool: "t", Calls: 1, Cost: tc.cost})
		if d.Allowed {
			t.Fatalf("%s: allowed", tc.name)
		}
		if tc.fails {
			if d.Err == nil || !errors.Is(d.Err, limiter.ErrStoreUnavailable) {
				t.Errorf("%s: Decision %+v: a denial without a wait of a call within the limit, read as one that waiting cannot help", tc.name, d)
			}
			continue
		}
		if d.Err != nil || d.Limit.Kind != tc.kind || d.RetryAfter != max(tc.wait, 0) {
			t.Errorf("%s: Decision %+v", tc.name, d)
		}
	}
}
