package redislimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
)

// TestReview9bRefundWithinIncrementGivesBackLostRefill is the Redis side of
// limiter/review9b_test.go: under 2 calls per 2 minutes, d1 at t0 on a full
// bucket, d2 at t0+30s, and d1 refunded at t0+30s. A user expects the
// limiter to then behave as one that never saw d1, as Limiter.Refund's doc
// promises ("a refunded call never lets more calls through than a limiter
// that never saw it would"): that one has its TAT at t0+1m30s after d2 and
// one more call x at t0+30s, and refuses a call at t0+1m. Instead the
// script's refund branch (script.go, mode "f") moves the TAT back by the
// whole increment (a minute) because 30 s < 1 m, to t0+1m, giving back the
// 30 s of refill that, without d1, were lost to a full bucket; the call at
// t0+1m passes: three calls within 30 s under 2 per 2 minutes.
func TestReview9bRefundWithinIncrementGivesBackLostRefill(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	lim := limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 2, Window: 2 * time.Minute}
	ctx := context.Background()
	t0 := time.Unix(1_800_000_000, 0)
	r := limiter.Request{Session: "s", Calls: 1}
	run := func(prefix string, withD1 bool) bool {
		s := redislimit.New(c, &redislimit.Options{Prefix: prefix, ClientTime: true, Timeout: testTimeout})
		l := newLimiter(t, s, nil, lim)
		var d1 limiter.Decision
		if withD1 {
			if d1 = l.AllowAt(ctx, t0, r); !d1.Allowed || d1.Err != nil {
				t.Fatalf("d1 at t0: %+v", d1)
			}
		}
		at := t0.Add(30 * time.Second)
		if d := l.AllowAt(ctx, at, r); !d.Allowed || d.Err != nil {
			t.Fatalf("d2 at t0+30s: %+v", d)
		}
		if withD1 {
			if err := l.Refund(ctx, at, d1); err != nil {
				t.Fatal(err)
			}
		}
		if d := l.AllowAt(ctx, at, r); !d.Allowed || d.Err != nil {
			t.Fatalf("x at t0+30s: %+v", d)
		}
		d := l.AllowAt(ctx, t0.Add(time.Minute), r)
		if d.Err != nil {
			t.Fatal(d.Err)
		}
		return d.Allowed
	}
	if run("review9b-never:", false) {
		t.Fatalf("a limiter that never saw d1 allows a call at t0+1m; the test's premise is wrong")
	}
	if run("review9b-refunded:", true) {
		t.Errorf("after d1 (t0) was refunded at t0+30s, a call at t0+1m passes: 3 calls within 30s under 2 per 2 minutes, which a limiter that never saw d1 refuses until t0+1m30s")
	}
}
