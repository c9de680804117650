package redislimit_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
)

// TestReview27bLongWindowBurstAgrees: on windows of decades, up to
// MaxWindow, a burst of exactly Max fits on Redis as on the memory store
// (exact since 96b898c), and one more unit is refused on both: the script's
// float64 Window*n/Max, in microseconds (below 2^51 on MaxWindow), never
// rounds a call of Max past the window nor the calls of a burst up across
// a microsecond.
func TestReview27bLongWindowBurstAgrees(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	ctx := context.Background()
	t0 := time.Unix(1_800_000_000, 0)
	r := rand.New(rand.NewPCG(27, 4))
	year := 365 * 24 * time.Hour
	windows := []time.Duration{limiter.MaxWindow, limiter.MaxWindow - 77*time.Microsecond, 49*year + 123457*time.Microsecond, 90 * 24 * time.Hour}
	for range 6 {
		windows = append(windows, time.Duration(r.Int64N(int64(limiter.MaxWindow-year)))+year)
	}
	n := 0
	for _, w := range windows {
		for _, tc := range []struct {
			kind  limiter.Kind
			max   float64
			req   limiter.Request
			times int
		}{
			{limiter.Rate, 7, limiter.Request{Calls: 1}, 7},
			{limiter.Rate, 97, limiter.Request{Calls: 1}, 97},
			{limiter.Rate, 11, limiter.Request{Calls: 11}, 1},
			{limiter.Spend, 2755.2, limiter.Request{Cost: 2755.2}, 1},
			{limiter.Spend, 1e-300, limiter.Request{Cost: 1e-300}, 1},
			{limiter.Spend, math.MaxFloat64, limiter.Request{Cost: math.MaxFloat64}, 1},
			{limiter.Spend, float64(r.IntN(1e7)+1) / 10, limiter.Request{}, 1},
		} {
			if tc.kind == limiter.Spend && tc.req.Cost == 0 {
				tc.req.Cost = tc.max
			}
			n++
			lim := limiter.Limit{Kind: tc.kind, Scope: limiter.Session, Max: tc.max, Window: w}
			rs := redislimit.New(c, &redislimit.Options{Prefix: fmt.Sprintf("r27b%d:", n), ClientTime: true, Timeout: testTimeout})
			for _, s := range []limiter.Store{limiter.NewMemoryStore(), rs} {
				l := newLimiter(t, s, nil, lim)
				req := tc.req
				req.Session = "s"
				for i := range tc.times {
					if d := l.AllowAt(ctx, t0, req); !d.Allowed {
						t.Errorf("%T, %v: call %d of %d of %+v denied (retry %v, err %v); want allowed", s, lim, i+1, tc.times, req, d.RetryAfter, d.Err)
					}
				}
				if d := l.AllowAt(ctx, t0, limiter.Request{Session: "s", Calls: 1, Cost: tc.max * 0x1p-40}); d.Allowed || d.Err != nil || d.RetryAfter <= 0 {
					t.Errorf("%T, %v: a call after the burst: allowed %v, retry %v, err %v; want a wait", s, lim, d.Allowed, d.RetryAfter, d.Err)
				}
			}
		}
	}
}

// TestReview27bBatchWindowBeyondMaxRefused: a Batch whose Rate or Spend
// Window is longer than MaxWindow is outside the Check contract: the store
// refuses it with an error, before any round trip, as the memory store
// does. On a window of centuries the script wrote theoretical arrival
// times past 2^53 microseconds, which it then refuses to read: every later
// call on the key failed (and passed, with FailOpen). The memory store's
// times wrapped around int64 instead: every call was allowed.
func TestReview27bBatchWindowBeyondMaxRefused(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	ctx := context.Background()
	s := redislimit.New(c, &redislimit.Options{Prefix: "r27bw:", ClientTime: true, Timeout: testTimeout})
	now := time.Unix(1_800_000_000, 0)
	for i, w := range []time.Duration{limiter.MaxWindow + time.Microsecond, 250 * 365 * 24 * time.Hour, math.MaxInt64} {
		for _, st := range []limiter.Store{s, limiter.NewMemoryStore()} {
			b := &limiter.Batch{Checks: []limiter.Check{{ID: "spend", Key: fmt.Sprint("k", i), Kind: limiter.Spend, Max: 1, Window: w, N: 1}}}
			if err := st.Apply(ctx, now, b); err == nil {
				t.Errorf("%T: a batch with a %v window: denied %d, no error; want an error", st, w, b.Denied)
			}
		}
	}
	// MaxWindow itself is valid: a call of Max, then a wait.
	for i, want := range []int{-1, 0} {
		b := &limiter.Batch{Checks: []limiter.Check{{ID: "spend", Key: "max", Kind: limiter.Spend, Max: 1, Window: limiter.MaxWindow, N: 1}}}
		if err := s.Apply(ctx, now, b); err != nil || b.Denied != want {
			t.Errorf("call %d on a MaxWindow window: denied %d, err %v; want %d", i, b.Denied, err, want)
		}
	}
}
