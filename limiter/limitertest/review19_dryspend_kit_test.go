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

// peeker is a store function that says it carries out Peek checks.
type peeker struct{ limiter.StoreFunc }

func (peeker) Peeks() bool { return true }

// TestReview19KitCatchesBadPeeks runs the kit, in a child process, against
// stores that say they peek and do not: one that takes what a Peek check
// asks (a dry run charged), and one that leaves Peek checks out (a dry
// run never denied). The kit had no dry-run subtest and passed both.
func TestReview19KitCatchesBadPeeks(t *testing.T) {
	stores := map[string]func(*testing.T) limiter.Store{
		"takes_peeks": func(*testing.T) limiter.Store {
			m := limiter.NewMemoryStore()
			return peeker{func(ctx context.Context, now time.Time, b *limiter.Batch) error {
				for i := range b.Checks {
					b.Checks[i].Peek = false
				}
				return m.Apply(ctx, now, b)
			}}
		},
		"ignores_peeks": func(*testing.T) limiter.Store {
			m := limiter.NewMemoryStore()
			return peeker{func(ctx context.Context, now time.Time, b *limiter.Batch) error {
				var idx []int
				one := *b
				one.Checks = nil
				for i, c := range b.Checks {
					if !c.Peek {
						one.Checks = append(one.Checks, c)
						idx = append(idx, i)
					}
				}
				if err := m.Apply(ctx, now, &one); err != nil {
					return err
				}
				b.Denied, b.RetryAfter = one.Denied, one.RetryAfter
				if one.Denied >= 0 {
					b.Denied = idx[one.Denied]
				}
				return nil
			}}
		},
	}
	if name := os.Getenv("LIMITERTEST_BAD_PEEK_STORE"); name != "" {
		limitertest.Run(t, stores[name])
		return
	}
	for name := range stores {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestReview19KitCatchesBadPeeks$")
			cmd.Env = append(os.Environ(), "LIMITERTEST_BAD_PEEK_STORE="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the kit passed store %s:\n%s", name, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestReview19KitCatchesBadPeeks/dry_run_checks_spend_takes_nothing") {
				t.Errorf("store %s: dry_run_checks_spend_takes_nothing did not fail (%v):\n%s", name, err, out)
			}
		})
	}
}

// TestReview19KitSkipsPeeksForOtherStores checks that the dry-run subtests
// skip a store that does not say it peeks (the limiter sends it no Peek
// check) instead of failing it.
func TestReview19KitSkipsPeeksForOtherStores(t *testing.T) {
	limitertest.Run(t, func(*testing.T) limiter.Store { return limiter.StoreFunc(limiter.NewMemoryStore().Apply) })
}
