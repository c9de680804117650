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

// rekeyed is a memory store that maps every check's key through f: a store
// that does not keep distinct keys apart.
func rekeyed(f func(string) string) func(*testing.T) limiter.Store {
	return func(*testing.T) limiter.Store {
		m := limiter.NewMemoryStore()
		return limiter.StoreFunc(func(ctx context.Context, now time.Time, b *limiter.Batch) error {
			for i := range b.Checks {
				b.Checks[i].Key = f(b.Checks[i].Key)
			}
			return m.Apply(ctx, now, b)
		})
	}
}

// TestReview13KitCatchesMergedKeys runs the kit, in a child process,
// against stores that merge distinct keys into one bucket, and expects
// keys_are_distinct to fail for each. Before that subtest, the kit passed
// both stores.
func TestReview13KitCatchesMergedKeys(t *testing.T) {
	stores := map[string]func(*testing.T) limiter.Store{
		// Keeps the first KiB of a key: long keys that differ only further
		// on share a bucket.
		"truncates_long_keys": rekeyed(func(k string) string { return k[:min(len(k), 1024)] }),
		"folds_case":          rekeyed(strings.ToLower),
	}
	if name := os.Getenv("LIMITERTEST_MERGING_STORE"); name != "" {
		limitertest.Run(t, stores[name])
		return
	}
	for name := range stores {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestReview13KitCatchesMergedKeys$")
			cmd.Env = append(os.Environ(), "LIMITERTEST_MERGING_STORE="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the kit passed store %s:\n%s", name, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestReview13KitCatchesMergedKeys/keys_are_distinct") {
				t.Errorf("store %s: keys_are_distinct did not fail (%v):\n%s", name, err, out)
			}
		})
	}
}
