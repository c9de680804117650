package redislimit_test

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
)

// TestReview20InvalidCheckFailsClosed sends the Redis store reservations
// (real and Peek) and refunds holding a check outside the [limiter.Check]
// contract, beside a valid rate check of one call. Each must fail with an
// error, before any round trip, and write nothing. The script used to
// decide them as limits and allow them (a NaN or negative N or Max, an
// infinite Max: every call allowed).
func TestReview20InvalidCheckFailsClosed(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	ctx := context.Background()
	spend := limiter.Check{ID: "bad", Key: "k", Kind: limiter.Spend, Max: 10, Window: time.Hour, N: 1}
	conc := limiter.Check{ID: "bad", Key: "k", Kind: limiter.Concurrency, Max: 2, N: 1}
	with := func(c limiter.Check, f func(*limiter.Check)) limiter.Check { f(&c); return c }
	bad := map[string]limiter.Check{
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
		"window_under_us": with(spend, func(c *limiter.Check) { c.Window = 999 * time.Nanosecond }),
		"kind_zero":       with(spend, func(c *limiter.Check) { c.Kind = 0 }),
		"slots_nan":       with(conc, func(c *limiter.Check) { c.Max = math.NaN() }),
		"slots_negative":  with(conc, func(c *limiter.Check) { c.Max = -1 }),
	}
	rate := limiter.Check{ID: "rate", Key: "k", Kind: limiter.Rate, Max: 1, Window: time.Hour, N: 1}
	n := 0
	for name, ch := range bad {
		for _, mode := range []string{"reserve", "peek", "refund"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				n++
				prefix := "r20bad" + strconv.Itoa(n) + ":"
				s := redislimit.New(c, &redislimit.Options{Prefix: prefix, Timeout: testTimeout})
				ch.Peek = mode == "peek"
				b := &limiter.Batch{Lease: 7, Refund: mode == "refund", Checks: []limiter.Check{rate, ch}}
				err := s.Apply(ctx, time.Now(), b)
				if err == nil {
					t.Fatalf("Apply(%s %+v) = nil error, Denied %d; want an error", mode, ch, b.Denied)
				}
				if !strings.Contains(err.Error(), "check 1") {
					t.Errorf("Apply(%s %+v) = %v; want the error to name check 1", mode, ch, err)
				}
				if keys, err := c.Keys(ctx, prefix+"*").Result(); err != nil || len(keys) != 0 {
					t.Errorf("after the failed Apply, keys %v (err %v); want none", keys, err)
				}
				ok := &limiter.Batch{Checks: []limiter.Check{rate}}
				if err := s.Apply(ctx, time.Now(), ok); err != nil || ok.Denied != -1 {
					t.Errorf("the rate's one call after the failed Apply: err %v, Denied %d; want allowed", err, ok.Denied)
				}
			})
		}
	}
}
