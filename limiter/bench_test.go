package limiter_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
	"golang.org/x/time/rate"
)

// benchLimits are the seeds' limits with budgets large enough that every
// benchmarked call is allowed (and so takes the full path, commit included).
var benchLimits = map[string][]limiter.Limit{
	"rate_session": {
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 1e9, Window: time.Minute},
	},
	"starter_rate_spend_session": {
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 1e9, Window: time.Minute},
		{Kind: limiter.Spend, Scope: limiter.Session, Max: 1e9, Window: time.Minute},
	},
	"roboshop_rate_user_inflight_global": {
		{Kind: limiter.Rate, Scope: limiter.User, Max: 1e9, Window: time.Minute},
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 1e6},
	},
}

var benchOrder = []string{"rate_session", "starter_rate_spend_session", "roboshop_rate_user_inflight_global"}

func newBenchLimiter(b testing.TB, name string) *limiter.Limiter {
	l, err := limiter.New(benchLimits[name], nil)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkAllow measures one in-memory decision (and release) for an
// existing key. baseline_xtime_rate is one golang.org/x/time/rate.Limiter
// AllowN call, the bare single-bucket path the others compare with.
func BenchmarkAllow(b *testing.B) {
	ctx := context.Background()
	b.Run("baseline_xtime_rate", func(b *testing.B) {
		rl := rate.NewLimiter(rate.Limit(1e9/60), 1e9)
		b.ReportAllocs()
		for b.Loop() {
			if !rl.AllowN(t0, 1) {
				b.Fatal("denied")
			}
		}
	})
	for _, name := range benchOrder {
		b.Run(name, func(b *testing.B) {
			l := newBenchLimiter(b, name)
			r := limiter.Request{Session: "s", User: "u", Tool: "t", Calls: 1, Cost: 1}
			l.Release(l.AllowAt(ctx, t0, r))
			b.ReportAllocs()
			for b.Loop() {
				d := l.AllowAt(ctx, t0, r)
				if !d.Allowed {
					b.Fatal("denied")
				}
				l.Release(d)
			}
		})
	}
}

// BenchmarkRefund measures an in-memory decision, its refund and its
// release for an existing key: the path of a call refused after it was
// allowed. Compare with BenchmarkAllow.
func BenchmarkRefund(b *testing.B) {
	ctx := context.Background()
	for _, name := range benchOrder {
		b.Run(name, func(b *testing.B) {
			l := newBenchLimiter(b, name)
			r := limiter.Request{Session: "s", User: "u", Tool: "t", Calls: 1, Cost: 1}
			l.Release(l.AllowAt(ctx, t0, r))
			b.ReportAllocs()
			for b.Loop() {
				d := l.AllowAt(ctx, t0, r)
				if !d.Allowed {
					b.Fatal("denied")
				}
				if err := l.Refund(ctx, t0, d); err != nil {
					b.Fatal(err)
				}
				l.Release(d)
			}
		})
	}
}

// BenchmarkAllowParallel is BenchmarkAllow under b.RunParallel. In the
// _key_per_goroutine variants every goroutine has its own session and user
// (many clients); otherwise all share one key, which serializes by design.
func BenchmarkAllowParallel(b *testing.B) {
	ctx := context.Background()
	b.Run("baseline_xtime_rate", func(b *testing.B) {
		rl := rate.NewLimiter(rate.Limit(1e9/60), 1e9)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				rl.AllowN(t0, 1)
			}
		})
	})
	for _, name := range benchOrder {
		for _, perG := range []bool{false, true} {
			sub := name
			if perG {
				sub += "_key_per_goroutine"
			}
			b.Run(sub, func(b *testing.B) {
				l := newBenchLimiter(b, name)
				var g atomic.Int64
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					r := limiter.Request{Session: "s", User: "u", Tool: "t", Calls: 1, Cost: 1}
					if perG {
						id := strconv.FormatInt(g.Add(1), 10)
						r.Session, r.User = "s"+id, "u"+id
					}
					l.Release(l.AllowAt(ctx, t0, r))
					for pb.Next() {
						d := l.AllowAt(ctx, t0, r)
						if !d.Allowed {
							b.Error("denied")
							return
						}
						l.Release(d)
					}
				})
			})
		}
	}
}
