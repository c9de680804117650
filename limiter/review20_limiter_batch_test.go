package limiter_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// review20BadChecks are checks outside the [limiter.Check] contract (a
// kind, a Max and, for Rate and Spend, a Window of a valid limit; N greater
// than zero), each of which a store decided as if it were a limit,
// allowing calls (a negative Max, or a NaN N, let every call through).
func review20BadChecks() map[string]limiter.Check {
	spend := limiter.Check{ID: "bad", Key: "k", Kind: limiter.Spend, Max: 10, Window: time.Hour, N: 1}
	conc := limiter.Check{ID: "bad", Key: "k", Kind: limiter.Concurrency, Max: 2, N: 1}
	with := func(c limiter.Check, f func(*limiter.Check)) limiter.Check { f(&c); return c }
	return map[string]limiter.Check{
		"n_nan":           with(spend, func(c *limiter.Check) { c.N = math.NaN() }),
		"n_negative":      with(spend, func(c *limiter.Check) { c.N = -5 }),
		"n_zero":          with(spend, func(c *limiter.Check) { c.N = 0 }),
		"n_inf":           with(spend, func(c *limiter.Check) { c.N = math.Inf(1) }),
		"max_nan":         with(spend, func(c *limiter.Check) { c.Max = math.NaN() }),
		"max_negative":    with(spend, func(c *limiter.Check) { c.Max = -1 }),
		"max_zero":        with(spend, func(c *limiter.Check) { c.Max = 0 }),
		"max_inf":         with(spend, func(c *limiter.Check) { c.Max = math.Inf(1) }),
		"window_zero":     with(spend, func(c *limiter.Check) { c.Window = 0 }),
		"window_negative": with(spend, func(c *limiter.Check) { c.Window = -time.Hour }),
		"kind_zero":       with(spend, func(c *limiter.Check) { c.Kind = 0 }),
		"kind_unknown":    with(spend, func(c *limiter.Check) { c.Kind = 9 }),
		"slots_nan":       with(conc, func(c *limiter.Check) { c.Max = math.NaN() }),
		"slots_negative":  with(conc, func(c *limiter.Check) { c.Max = -1 }),
	}
}

// TestReview20InvalidCheckFailsClosed sends the MemoryStore, through its
// public Apply, reservations (real and Peek) and refunds holding a check
// outside the contract, beside a valid rate check of one call. Each must
// fail with an error and change nothing: the rate's one call is still
// there afterwards. The store used to decide them as limits and allow
// them.
func TestReview20InvalidCheckFailsClosed(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	rate := limiter.Check{ID: "rate", Key: "k", Kind: limiter.Rate, Max: 1, Window: time.Hour, N: 1}
	for name, bad := range review20BadChecks() {
		for _, mode := range []string{"reserve", "peek", "refund"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				s := limiter.NewMemoryStore()
				bad.Peek = mode == "peek"
				b := &limiter.Batch{Lease: 7, Refund: mode == "refund", Checks: []limiter.Check{rate, bad}}
				err := s.Apply(ctx, now, b)
				if err == nil {
					t.Fatalf("Apply(%s %+v) = nil error, Denied %d; want an error", mode, bad, b.Denied)
				}
				if !strings.Contains(err.Error(), "check 1") {
					t.Errorf("Apply(%s %+v) = %v; want the error to name check 1", mode, bad, err)
				}
				if n := s.Len(); n != 0 {
					t.Errorf("after the failed Apply, the store holds %d entries, want 0", n)
				}
				ok := &limiter.Batch{Checks: []limiter.Check{rate}}
				if err := s.Apply(ctx, now, ok); err != nil || ok.Denied != -1 {
					t.Errorf("the rate's one call after the failed Apply: err %v, Denied %d; want allowed", err, ok.Denied)
				}
			})
		}
	}
}

// TestReview20ValidChecksStillPass: the edges a Limit allows (a Max of
// 5e-324 or MaxFloat64, a cost of 5e-324 or MaxFloat64, MinWindow and
// MaxWindow) are not taken for invalid checks.
func TestReview20ValidChecksStillPass(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	for _, c := range []limiter.Check{
		{ID: "a", Kind: limiter.Spend, Max: 5e-324, Window: limiter.MinWindow, N: 5e-324},
		{ID: "b", Kind: limiter.Spend, Max: math.MaxFloat64, Window: limiter.MaxWindow, N: math.MaxFloat64},
		{ID: "c", Kind: limiter.Rate, Max: 1, Window: time.Hour, N: 1, Peek: true},
		{ID: "d", Kind: limiter.Concurrency, Max: 1, N: 1},
	} {
		b := &limiter.Batch{Lease: 3, Checks: []limiter.Check{c}}
		if err := limiter.NewMemoryStore().Apply(ctx, now, b); err != nil || b.Denied != -1 {
			t.Errorf("Apply(%+v): err %v, Denied %d; want allowed", c, err, b.Denied)
		}
	}
}
