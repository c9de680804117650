package redislimit

import (
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview24bEarlyClockWorks: with ClientTime (for tests that control
// time), a limiter whose clock starts at the zero time.Time (year 1, a test
// clock the memory store supports) or any time before 1685 had every
// decision after a bucket's first fail with an error: the script refused as
// "not a time" the theoretical arrival time it had itself written, over
// 2^53 microseconds before 1970. A TAT is read as a time back to 2^53
// microseconds before now too.
func TestReview24bEarlyClockWorks(t *testing.T) {
	c := agreeClient(t)
	ctx := context.Background()
	limits := []limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Max: 2, Window: time.Second},
		{Kind: limiter.Spend, Scope: limiter.Session, Max: 10, Window: time.Hour},
	}
	for _, t0 := range []time.Time{{}, time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), time.Now()} {
		s := New(c, &Options{Prefix: "r24b:" + t0.Format(time.RFC3339Nano) + ":", ClientTime: true, Timeout: 10 * time.Second})
		l, err := limiter.New(limits, &limiter.Options{Store: s})
		if err != nil {
			t.Fatal(err)
		}
		req := limiter.Request{User: "u", Session: "s", Calls: 1, Cost: 4}
		for i, want := range []bool{true, true, false} {
			r := req
			if i == 2 {
				r.Cost = 2 // within the spend limit: the rate limit refuses it
			}
			d := l.AllowAt(ctx, t0, r)
			if d.Err != nil || d.Allowed != want {
				t.Fatalf("clock %v, call %d: allowed %v, err %v; want allowed %v without error", t0, i, d.Allowed, d.Err, want)
			}
			if !d.Allowed && (d.Limit.Kind != limiter.Rate || d.RetryAfter <= 0 || d.RetryAfter > time.Second) {
				t.Errorf("clock %v: denied by %v, retry %v; want the rate limit, within a second", t0, d.Limit, d.RetryAfter)
			}
		}
		// A second later the rate allows one more; the spend (8 of 10
		// taken) refuses it, and a refund of an allowed call makes room.
		d := l.AllowAt(ctx, t0.Add(time.Second), req)
		if d.Err != nil || d.Allowed || d.Limit.Kind != limiter.Spend {
			t.Fatalf("clock %v, a second later: allowed %v by %v, err %v; want a spend denial", t0, d.Allowed, d.Limit, d.Err)
		}
		d = l.AllowAt(ctx, t0.Add(2*time.Second), limiter.Request{User: "u", Session: "s", Calls: 1, Cost: 2})
		if d.Err != nil || !d.Allowed {
			t.Fatalf("clock %v: a call of cost 2: allowed %v, err %v", t0, d.Allowed, d.Err)
		}
		if err := l.Refund(ctx, t0.Add(2*time.Second), d); err != nil {
			t.Fatalf("clock %v: refund: %v", t0, err)
		}
		d = l.AllowAt(ctx, t0.Add(3*time.Second), limiter.Request{User: "u", Session: "s", Calls: 1, Cost: 2})
		if d.Err != nil || !d.Allowed {
			t.Fatalf("clock %v: after the refund: allowed %v by %v, err %v", t0, d.Allowed, d.Limit, d.Err)
		}
	}
}
