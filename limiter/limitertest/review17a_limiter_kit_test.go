package limitertest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/limitertest"
)

// TestReview17aKitCatchesShortMemories runs the kit, in a child process,
// against stores that say their slots are leases but remember released
// leases only for a while: one that ignores a release of the lease it
// released last, and one that remembers the last four. Both count slots
// otherwise, so a stale release that comes after other releases frees a
// slot another call holds. release_twice_frees_one_slot released a
// Decision a second time only right after its first release, or when no
// slot was held, and passed them.
func TestReview17aKitCatchesShortMemories(t *testing.T) {
	remembering := func(n int) func(*testing.T) limiter.Store {
		return func(*testing.T) limiter.Store {
			m := limiter.NewMemoryStore()
			var mu sync.Mutex
			var recent []uint64 // the last n leases released
			return leaser{func(ctx context.Context, now time.Time, b *limiter.Batch) error {
				if b.Release {
					mu.Lock()
					for _, l := range recent {
						if l == b.Lease {
							mu.Unlock()
							return nil // released already
						}
					}
					if recent = append(recent, b.Lease); len(recent) > n {
						recent = recent[1:]
					}
					mu.Unlock()
				}
				b.Lease = 0 // count the slots
				return m.Apply(ctx, now, b)
			}}
		}
	}
	stores := map[string]func(*testing.T) limiter.Store{
		"remembers_the_last_release":    remembering(1),
		"remembers_the_last_4_releases": remembering(4),
	}
	if name := os.Getenv("LIMITERTEST_SHORT_MEMORY_STORE"); name != "" {
		limitertest.Run(t, stores[name])
		return
	}
	for name := range stores {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestReview17aKitCatchesShortMemories$")
			cmd.Env = append(os.Environ(), "LIMITERTEST_SHORT_MEMORY_STORE="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the kit passed store %s:\n%s", name, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestReview17aKitCatchesShortMemories/release_twice_frees_one_slot") {
				t.Errorf("store %s: release_twice_frees_one_slot did not fail (%v):\n%s", name, err, out)
			}
		})
	}
}
