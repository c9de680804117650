package limitertest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/limitertest"
)

// TestReview20KitCatchesTakeAndGiveBack runs the kit's dry-run race, in
// child processes, against a store that "peeks" by taking what a Peek
// check asks and giving it back at once with a refund, in two steps: for
// that moment a concurrent real call can be denied, which the kit says it
// checks ("not even for a moment that a concurrent real call could see").
// The give-back follows at once, with nothing in between: the narrowest
// window such a store can have. Every one of the runs must fail.
func TestReview20KitCatchesTakeAndGiveBack(t *testing.T) {
	if os.Getenv("LIMITERTEST_TAKE_AND_GIVE_BACK") != "" {
		limitertest.Run(t, func(*testing.T) limiter.Store {
			m := limiter.NewMemoryStore()
			return peeker{func(ctx context.Context, now time.Time, b *limiter.Batch) error {
				var peeks []limiter.Check
				for i := range b.Checks {
					if b.Checks[i].Peek && !b.Release && !b.Refund {
						b.Checks[i].Peek = false
						peeks = append(peeks, b.Checks[i])
					}
				}
				if err := m.Apply(ctx, now, b); err != nil || b.Denied >= 0 || len(peeks) == 0 {
					return err
				}
				return m.Apply(ctx, now, &limiter.Batch{Refund: true, Checks: peeks})
			}}
		})
		return
	}
	const runs = 3
	for i := range runs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestReview20KitCatchesTakeAndGiveBack$/^dry_run_never_fails_a_real_call$", "-test.count=1")
		cmd.Env = append(os.Environ(), "LIMITERTEST_TAKE_AND_GIVE_BACK=1")
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("run %d of %d: the kit passed a store that takes a dry run's cost and gives it back:\n%s", i+1, runs, out)
		}
		if !strings.Contains(string(out), "--- FAIL: TestReview20KitCatchesTakeAndGiveBack/dry_run_never_fails_a_real_call") {
			t.Fatalf("run %d: dry_run_never_fails_a_real_call did not fail (%v):\n%s", i+1, err, out)
		}
	}
}
