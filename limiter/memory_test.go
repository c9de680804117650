package limiter_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/limitertest"
)

func TestMemoryStoreConformance(t *testing.T) {
	limitertest.Run(t, func(t *testing.T) limiter.Store { return limiter.NewMemoryStore() })
}

// TestMemoryStoreThroughInterface runs the kit with the MemoryStore hidden
// behind a StoreFunc, so the limiter takes its generic path (Batch, Check)
// that third-party stores see.
func TestMemoryStoreThroughInterface(t *testing.T) {
	limitertest.Run(t, func(t *testing.T) limiter.Store {
		return limiter.StoreFunc(limiter.NewMemoryStore().Apply)
	})
}

// TestMemoryStoreRefundsThroughInterface runs the kit, refund cases
// included, with the MemoryStore behind another type that keeps its Refunds
// method, so the limiter sends it Refund batches through Apply.
func TestMemoryStoreRefundsThroughInterface(t *testing.T) {
	limitertest.Run(t, func(t *testing.T) limiter.Store {
		return memoryBehind{limiter.NewMemoryStore()}
	})
}

// memoryBehind hides a MemoryStore's type from the limiter, which then
// takes its generic path, keeping its methods.
type memoryBehind struct{ *limiter.MemoryStore }

// TestManyLimits applies more limits to one call than the limiter handles
// without allocating, on both paths.
func TestManyLimits(t *testing.T) {
	var limits []limiter.Limit
	for i := 1; i <= 12; i++ {
		// Rate limits of i+2 calls per i seconds: the tightest burst is 3.
		limits = append(limits, limiter.Limit{Kind: limiter.Rate, Scope: limiter.Scope(1 + i%3), Max: float64(i + 2), Window: time.Duration(i) * time.Second})
	}
	for _, tc := range []struct {
		name  string
		store limiter.Store
	}{{"memory", nil}, {"interface", limiter.StoreFunc(limiter.NewMemoryStore().Apply)}} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := limiter.New(limits, &limiter.Options{Store: tc.store})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for range 4 {
				d := l.AllowAt(context.Background(), t0, limiter.Request{Session: "s", User: "u", Calls: 1})
				if d.Allowed {
					got = append(got, "ok")
				} else {
					got = append(got, d.Limit.String()+" "+d.RetryAfter.String())
				}
			}
			// Each call takes floor(1s/3) = 333333333ns of the bucket.
			want := []string{"ok", "ok", "ok", "rate 3/1s per user 333.333332ms"}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("call %d: %q, want %q", i, got[i], want[i])
				}
			}
		})
	}
}

// TestSweepKeepsBusyKeys fills a store with keys that soon go idle, so
// that it sweeps many times, and checks that keys still limited keep their
// state.
func TestSweepKeepsBusyKeys(t *testing.T) {
	s := limiter.NewMemoryStore()
	l, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 2, Window: 10 * time.Millisecond},
		{Kind: limiter.Rate, Scope: limiter.Session, Tool: "slow", Max: 1, Window: time.Hour},
		{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1},
	}, &limiter.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	held := l.AllowAt(ctx, t0, limiter.Request{Session: "busy", User: "holder", Tool: "slow", Calls: 1})
	if !held.Allowed {
		t.Fatalf("first call denied: %v", held.Limit)
	}
	// 300,000 keys over 30s, each idle 5ms after its call.
	const n = 300_000
	for i := range n {
		at := t0.Add(time.Duration(i) * 100 * time.Microsecond)
		l.Release(l.AllowAt(ctx, at, limiter.Request{Session: "k" + strconv.Itoa(i), User: "k", Calls: 1}))
	}
	// A shard is swept when it has doubled since its last sweep and holds
	// at least 256 entries: with 256 shards and ~50 active keys, at most
	// 65,536 entries remain.
	if got := s.Len(); got > 256*256 {
		t.Errorf("%d keys held, want idle keys swept (at most %d)", got, 256*256)
	}
	now := t0.Add(30 * time.Second)
	if d := l.AllowAt(ctx, now, limiter.Request{Session: "busy", User: "x", Tool: "slow", Calls: 1}); d.Allowed || d.Limit.Tool != "slow" {
		t.Errorf("busy session after sweeps: allowed=%v limit=%v, want its rate state kept", d.Allowed, d.Limit)
	}
	if d := l.AllowAt(ctx, now, limiter.Request{Session: "y", User: "holder"}); d.Allowed || d.Limit.Kind != limiter.Concurrency {
		t.Errorf("user holding a slot after sweeps: allowed=%v limit=%v, want its slot kept", d.Allowed, d.Limit)
	}
	l.Release(held)
	s.Sweep(now.Add(2 * time.Hour))
	if got := s.Len(); got != 0 {
		t.Errorf("after a final sweep: %d keys, want 0", got)
	}
}
