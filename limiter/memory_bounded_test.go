package limiter_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestMemoryBounded feeds a million distinct keys (200,000 under the race
// detector), then as many more once the first have gone idle, and measures
// the heap: the second million replaces the first rather than adding to it,
// and a sweep gives everything back.
func TestMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("a million keys")
	}
	n := 1_000_000
	if raceEnabled {
		n = 200_000
	}
	s := limiter.NewMemoryStore()
	l, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.Session, Max: 10, Window: time.Minute}}, &limiter.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fill := func(at time.Time, prefix string) {
		for i := range n {
			if d := l.AllowAt(ctx, at, limiter.Request{Session: prefix + strconv.Itoa(i), Calls: 1}); !d.Allowed {
				t.Fatalf("new key denied: %v", d.Limit)
			}
		}
	}
	base := heapAlloc()
	fill(t0, "first-")
	h1, n1 := heapAlloc(), s.Len()
	fill(t0.Add(2*time.Minute), "second-")
	h2, n2 := heapAlloc(), s.Len()
	s.Sweep(t0.Add(10 * time.Minute))
	h3, n3 := heapAlloc(), s.Len()
	mb := func(h uint64) float64 { return float64(int64(h)-int64(base)) / (1 << 20) }
	t.Logf("heap above baseline: %.1f MiB with %d keys; %.1f MiB with %d keys after a second million; %.1f MiB with %d keys after Sweep",
		mb(h1), n1, mb(h2), n2, mb(h3), n3)
	if n1 != n {
		t.Errorf("after the first million: %d keys held, want %d (none idle yet)", n1, n)
	}
	if n2 > n+n/10 {
		t.Errorf("after the second million: %d keys held, want at most %d: idle keys not evicted", n2, n+n/10)
	}
	if mb(h2) > 1.3*mb(h1) {
		t.Errorf("heap grew from %.1f to %.1f MiB over a second million keys, want at most 1.3x", mb(h1), mb(h2))
	}
	if n3 != 0 || mb(h3) > 0.05*mb(h1) {
		t.Errorf("after Sweep: %d keys, %.1f MiB above baseline; want 0 keys and at most 5%% of %.1f MiB", n3, mb(h3), mb(h1))
	}
}
