package limitertest_test

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/limitertest"
)

// brokenStores are stores that each break one rule of the Store contract.
func brokenStores() map[string]func(t *testing.T) limiter.Store {
	return map[string]func(t *testing.T) limiter.Store{
		"always_allows": func(*testing.T) limiter.Store {
			return limiter.StoreFunc(func(_ context.Context, _ time.Time, b *limiter.Batch) error {
				b.Denied = -1
				return nil
			})
		},
		"not_atomic": func(*testing.T) limiter.Store {
			// Applies each check as its own batch: a call denied by one
			// scope has already taken from the others.
			m := limiter.NewMemoryStore()
			return limiter.StoreFunc(func(ctx context.Context, now time.Time, b *limiter.Batch) error {
				b.Denied, b.RetryAfter = -1, 0
				for i, c := range b.Checks {
					one := limiter.Batch{Release: b.Release, Lease: b.Lease, Checks: []limiter.Check{c}}
					if err := m.Apply(ctx, now, &one); err != nil {
						return err
					}
					if !b.Release && one.Denied >= 0 && b.Denied < 0 {
						b.Denied, b.RetryAfter = i, one.RetryAfter
					}
				}
				return nil
			})
		},
		"never_releases": func(*testing.T) limiter.Store {
			m := limiter.NewMemoryStore()
			return limiter.StoreFunc(func(ctx context.Context, now time.Time, b *limiter.Batch) error {
				if b.Release {
					return nil
				}
				return m.Apply(ctx, now, b)
			})
		},
		"rounds_retry_after_up_to_seconds": func(*testing.T) limiter.Store {
			m := limiter.NewMemoryStore()
			return limiter.StoreFunc(func(ctx context.Context, now time.Time, b *limiter.Batch) error {
				err := m.Apply(ctx, now, b)
				if b.RetryAfter > 0 {
					b.RetryAfter = b.RetryAfter.Truncate(time.Second) + time.Second
				}
				return err
			})
		},
		"ignores_refunds": func(*testing.T) limiter.Store {
			// Says it refunds, and gives nothing back.
			m := limiter.NewMemoryStore()
			return refunder{func(ctx context.Context, now time.Time, b *limiter.Batch) error {
				if b.Refund {
					return nil
				}
				return m.Apply(ctx, now, b)
			}}
		},
		"refunds_twice": func(*testing.T) limiter.Store {
			// Gives back twice what a decision took (a refund retried
			// after a lost reply, say).
			m := limiter.NewMemoryStore()
			return refunder{func(ctx context.Context, now time.Time, b *limiter.Batch) error {
				if b.Refund {
					if err := m.Apply(ctx, now, b); err != nil {
						return err
					}
				}
				return m.Apply(ctx, now, b)
			}}
		},
	}
}

// mustFail names, for some broken stores, a subtest of the kit that must
// be among those that fail for it.
var mustFail = map[string]string{
	"ignores_refunds": "refund_restores_units",
	"refunds_twice":   "refund_restores_units",
}

// refunder is a store function that says it refunds.
type refunder struct{ limiter.StoreFunc }

func (refunder) Refunds() bool { return true }

// TestKitCatchesBrokenStores runs the kit, in a child process, against
// stores that break the contract, and expects it to fail for each.
func TestKitCatchesBrokenStores(t *testing.T) {
	if name := os.Getenv("LIMITERTEST_BROKEN_STORE"); name != "" {
		limitertest.Run(t, brokenStores()[name])
		return
	}
	for name := range brokenStores() {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestKitCatchesBrokenStores$")
			cmd.Env = append(os.Environ(), "LIMITERTEST_BROKEN_STORE="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the kit passed store %s:\n%s", name, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestKitCatchesBrokenStores/") {
				t.Fatalf("the kit did not fail a subtest for store %s (%v):\n%s", name, err, out)
			}
			var failed []string
			for _, line := range strings.Split(string(out), "\n") {
				if s := strings.TrimSpace(line); strings.HasPrefix(s, "--- FAIL: TestKitCatchesBrokenStores/") {
					failed = append(failed, strings.Fields(strings.TrimPrefix(s, "--- FAIL: TestKitCatchesBrokenStores/"))[0])
				}
			}
			t.Logf("store %s failed %v", name, failed)
			if want, ok := mustFail[name]; ok && !slices.Contains(failed, want) {
				t.Errorf("store %s failed %v, want %s among them", name, failed, want)
			}
		})
	}
}

func TestMemoryStorePasses(t *testing.T) {
	limitertest.Run(t, func(*testing.T) limiter.Store { return limiter.NewMemoryStore() })
}
