package limiter_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview55EarlyClockRefundElapsed: Refund documents that the time since
// a decision is "measured between the nows passed to AllowAt and Refund",
// and Kept reads the same time. For a store other than the memory one, a
// now outside int64 nanoseconds (before 1678 or after 2262) was replaced
// by time.Now, as for a store that ignores now; but a store that decides at
// the now it is given (the Redis store's ClientTime, for a test's clock)
// took a decision at such a clock and its refund 30s later as microseconds
// apart, and gave back the 30s of refill the bucket lost meanwhile (Kept
// said nothing was kept). The zero time still reads the clock, as
// TestReview36RefundZeroTimeReadsTheClock pins; a clock that starts at it
// counts from it.
func TestReview55EarlyClockRefundElapsed(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		allow, back time.Time
		want        time.Duration
	}{
		{"year_1600", time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1600, 1, 1, 0, 0, 30, 0, time.UTC), 30 * time.Second},
		{"year_2300", time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2300, 1, 1, 0, 0, 30, 0, time.UTC), 30 * time.Second},
		{"from_the_zero_time", time.Time{}, time.Time{}.Add(30 * time.Second), 30 * time.Second},
		{"ordinary", t0, t0.Add(30 * time.Second), 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &ctxStore{}
			l, err := limiter.New([]limiter.Limit{
				// A cost of 1 takes a minute.
				{Kind: limiter.Spend, Scope: limiter.Session, Max: 2, Window: 2 * time.Minute},
			}, &limiter.Options{Store: s})
			if err != nil {
				t.Fatal(err)
			}
			d := l.AllowAt(ctx, tc.allow, limiter.Request{Session: "s", Cost: 1})
			if !d.Allowed {
				t.Fatalf("AllowAt: denied: %v %v", d.Limit, d.Err)
			}
			if got := l.Kept(tc.back, d); got != 0.5 {
				t.Errorf("Kept(%v) of a decision at %v, half its minute later = %v, want 0.5", tc.back, tc.allow, got)
			}
			if err := l.Refund(ctx, tc.back, d); err != nil {
				t.Fatalf("Refund: %v", err)
			}
			if diff := cmp.Diff([]time.Duration{tc.want}, s.elapsed); diff != "" {
				t.Errorf("refund at %v of a decision at %v: Elapsed (-want +got):\n%s", tc.back, tc.allow, diff)
			}
		})
	}
}
