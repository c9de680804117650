//go:build !race

// The race detector allocates on its own, so allocation counts are only
// checked without it; this file is not built under -race (nothing skips).

package limiter_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview36RefundZeroAllocsAtStackLimit pins Refund's documented "like
// AllowAt, does not allocate" on the in-memory store at the largest limit
// set the decision itself keeps on the stack (eight limits): a decision,
// its refund and its release allocate nothing there, so the refund path
// does not switch to the heap one limit earlier than AllowAt does.
func TestReview36RefundZeroAllocsAtStackLimit(t *testing.T) {
	var limits []limiter.Limit
	for _, k := range []limiter.Kind{limiter.Rate, limiter.Spend} {
		for _, w := range []time.Duration{time.Minute, time.Hour} {
			for _, s := range []limiter.Scope{limiter.Session, limiter.User} {
				limits = append(limits, limiter.Limit{Kind: k, Scope: s, Max: 1e9, Window: w})
			}
		}
	}
	if len(limits) != 8 {
		t.Fatalf("%d limits, want 8", len(limits))
	}
	l, err := limiter.New(limits, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := limiter.Request{Session: "s", User: "u", Tool: "t", Calls: 1, Cost: 1}
	l.Release(l.AllowAt(ctx, t0, r))
	allocs := testing.AllocsPerRun(1000, func() {
		d := l.AllowAt(ctx, t0, r)
		if !d.Allowed {
			t.Fatalf("denied by %v", d.Limit)
		}
		if err := l.Refund(ctx, t0, d); err != nil {
			t.Fatal(err)
		}
		l.Release(d)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per decision, refund and release with 8 limits, want 0", allocs)
	}
}
