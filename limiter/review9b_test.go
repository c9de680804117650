package limiter_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

var review9bT0 = time.Unix(1_800_000_000, 0)

// TestReview9bRefundWithinIncrementGivesBackLostRefill: Limiter.Refund's
// doc says a refund sooner than the decision's increment after it gives the
// bucket back "d's own" units, and that "a refunded call thus never lets
// more calls through than a limiter that never saw it would". A user
// expects that refunding d1 leaves the limiter as if d1 had never been made.
//
// Instead, under 2 calls per 2 minutes (one call's increment is a minute),
// d1 at t0 on a full bucket, then d2 at t0+30s, then d1 refunded at t0+30s
// (30 s < 1 m: the refund is given in full) moves the TAT back by a whole
// minute, to t0+1m. A limiter that never saw d1 has its TAT at t0+1m30s:
// the 30 s the bucket spent refilling from t0 count for d2 only because d1
// had emptied the bucket; without d1 the bucket was full and they were
// lost. So a call at t0+1m passes (three calls within 30 s, d2 and x at
// t0+30s and y at t0+1m) that a limiter that never saw d1 refuses until
// t0+1m30s. "The bucket cannot have refilled since" is not the condition
// under which the units are d's own: the refund may give back at most the
// increment minus the time elapsed since d (memory.go MemoryStore.refund,
// refund.go Refund).
func TestReview9bRefundWithinIncrementGivesBackLostRefill(t *testing.T) {
	lim := []limiter.Limit{{Kind: limiter.Rate, Scope: limiter.Session, Max: 2, Window: 2 * time.Minute}}
	ctx := context.Background()
	r := limiter.Request{Session: "s", Calls: 1}
	run := func(t *testing.T, withD1 bool) bool {
		l, err := limiter.New(lim, nil)
		if err != nil {
			t.Fatal(err)
		}
		var d1 limiter.Decision
		if withD1 {
			if d1 = l.AllowAt(ctx, review9bT0, r); !d1.Allowed {
				t.Fatalf("d1 at t0: %+v", d1)
			}
		}
		at := review9bT0.Add(30 * time.Second)
		if d := l.AllowAt(ctx, at, r); !d.Allowed {
			t.Fatalf("d2 at t0+30s: %+v", d)
		}
		if withD1 {
			if err := l.Refund(ctx, at, d1); err != nil {
				t.Fatal(err)
			}
		}
		if d := l.AllowAt(ctx, at, r); !d.Allowed {
			t.Fatalf("x at t0+30s: %+v", d)
		}
		return l.AllowAt(ctx, review9bT0.Add(time.Minute), r).Allowed
	}
	never := run(t, false)
	refunded := run(t, true)
	if never {
		t.Fatalf("a limiter that never saw d1 allows y at t0+1m; the test's premise is wrong")
	}
	if refunded {
		t.Errorf("after d1 (t0) was refunded at t0+30s, y at t0+1m passes: 3 calls (d2, x at t0+30s, y at t0+1m) within 30s under 2 per 2 minutes, which a limiter that never saw d1 refuses until t0+1m30s; the refund gave back a minute where only 30s were d1's own")
	}
}
