//go:build !race

package limiter_test

import (
	"context"
	"testing"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestDryRunZeroAllocs checks that an in-memory dry run, allowed or denied
// by a spend limit, allocates nothing for an existing key.
func TestDryRunZeroAllocs(t *testing.T) {
	ctx := context.Background()
	l := newBenchLimiter(t, "starter_rate_spend_session")
	l.Release(l.AllowAt(ctx, t0, limiter.Request{Session: "s", User: "u", Tool: "t", Calls: 1, Cost: 1}))
	for name, cost := range map[string]float64{"allowed": 1, "denied": 2e9} {
		r := limiter.Request{Session: "s", User: "u", Tool: "t", Calls: 1, Cost: cost, DryRun: true}
		allocs := testing.AllocsPerRun(1000, func() {
			d := l.AllowAt(ctx, t0, r)
			if d.Allowed != (name == "allowed") {
				t.Fatalf("%s: %+v", name, d)
			}
			l.Release(d)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per dry run, want 0", name, allocs)
		}
	}
}
