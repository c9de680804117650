//go:build !race

// The race detector allocates on its own, so allocation counts are only
// checked without it; this file is not built under -race (nothing skips).

package limiter_test

import (
	"context"
	"testing"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestZeroAllocs checks the in-memory decision and release for an existing
// key allocate nothing.
func TestZeroAllocs(t *testing.T) {
	ctx := context.Background()
	for _, name := range benchOrder {
		l := newBenchLimiter(t, name)
		r := limiter.Request{Session: "s", User: "u", Tool: "t", Calls: 1, Cost: 1}
		l.Release(l.AllowAt(ctx, t0, r))
		allocs := testing.AllocsPerRun(1000, func() {
			d := l.AllowAt(ctx, t0, r)
			if !d.Allowed {
				t.Fatal("denied")
			}
			l.Release(d)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per decision and release, want 0", name, allocs)
		}
	}
}

// TestRefundZeroAllocs checks that an in-memory refund of an allowed call,
// between its decision and its release, allocates nothing.
func TestRefundZeroAllocs(t *testing.T) {
	ctx := context.Background()
	for _, name := range benchOrder {
		l := newBenchLimiter(t, name)
		r := limiter.Request{Session: "s", User: "u", Tool: "t", Calls: 1, Cost: 1}
		l.Release(l.AllowAt(ctx, t0, r))
		allocs := testing.AllocsPerRun(1000, func() {
			d := l.AllowAt(ctx, t0, r)
			if err := l.Refund(ctx, t0, d); err != nil {
				t.Fatal(err)
			}
			l.Release(d)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per decision, refund and release, want 0", name, allocs)
		}
	}
}
