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

// leaser is a store function that says its slots are leases.
type leaser struct{ limiter.StoreFunc }

func (leaser) LeasesSlots() bool { return true }

// TestReview17KitCatchesCountedLeases runs the kit, in a child process,
// against a store that says its slots are leases but counts them (it
// forgets every batch's Lease), so that a second release of a decision
// frees a slot another call holds; and expects release_twice_frees_one_slot
// to fail for it. Before that subtest the kit passed it.
func TestReview17KitCatchesCountedLeases(t *testing.T) {
	stores := map[string]func(*testing.T) limiter.Store{
		"counts_its_leases": func(*testing.T) limiter.Store {
			m := limiter.NewMemoryStore()
			return leaser{func(ctx context.Context, now time.Time, b *limiter.Batch) error {
				b.Lease = 0
				return m.Apply(ctx, now, b)
			}}
		},
	}
	if name := os.Getenv("LIMITERTEST_COUNTING_STORE"); name != "" {
		limitertest.Run(t, stores[name])
		return
	}
	for name := range stores {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestReview17KitCatchesCountedLeases$")
			cmd.Env = append(os.Environ(), "LIMITERTEST_COUNTING_STORE="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the kit passed store %s:\n%s", name, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestReview17KitCatchesCountedLeases/release_twice_frees_one_slot") {
				t.Errorf("store %s: release_twice_frees_one_slot did not fail (%v):\n%s", name, err, out)
			}
		})
	}
}

// TestReview17MemoryStoreRunsLeaseChecks: the memory store's slots are
// leases now, so the kit's lease checks run for it rather than being
// skipped.
func TestReview17MemoryStoreRunsLeaseChecks(t *testing.T) {
	var s limiter.Store = limiter.NewMemoryStore()
	if ls, ok := s.(limiter.LeaseStore); !ok || !ls.LeasesSlots() {
		t.Fatalf("%T is not a limiter.LeaseStore whose LeasesSlots reports true", s)
	}
}
