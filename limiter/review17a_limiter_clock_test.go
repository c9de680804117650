package limiter_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// refundingStore is the memory store behind the Store interface, as a
// store the Limiter does not know (Redis, say): its AllowAt, Refund and
// Kept take the Store path, which measures a refund's Elapsed itself.
type refundingStore struct{ m *limiter.MemoryStore }

func (s refundingStore) Apply(ctx context.Context, now time.Time, b *limiter.Batch) error {
	return s.m.Apply(ctx, now, b)
}
func (refundingStore) Refunds() bool { return true }

// TestReview17aRefundAcrossAWallStep: a refund's time since its decision
// was the wall time between the two on a store other than the memory one
// (Batch.Elapsed, and Kept), while the memory store measures it on the
// monotonic clock since 11afea4. A step of the wall clock between a
// decision and its refund then gave back what other calls took (back: the
// time since read as none) or nothing at all and a record charged in full
// (forward: as an hour). Both paths now agree with a run without a step.
func TestReview17aRefundAcrossAWallStep(t *testing.T) {
	ctx := context.Background()
	spend := limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 10, Window: time.Minute}
	half := limiter.Request{Session: "s", Cost: 5}
	stores := map[string]func() limiter.Store{
		"memory":                func() limiter.Store { return limiter.NewMemoryStore() },
		"through_the_store_api": func() limiter.Store { return refundingStore{limiter.NewMemoryStore()} },
	}
	// run spends the bucket at t1 in two calls, refunds the second at t2
	// (20s later by the monotonic clock), and reports what Kept said and
	// what two probes at t2 got.
	run := func(t *testing.T, s limiter.Store, t1, t2 time.Time) string {
		t.Helper()
		l, err := limiter.New([]limiter.Limit{spend}, &limiter.Options{Store: s})
		if err != nil {
			t.Fatal(err)
		}
		if d := l.AllowAt(ctx, t1, half); !d.Allowed {
			t.Fatalf("first half: %+v", d)
		}
		d := l.AllowAt(ctx, t1, half)
		if !d.Allowed {
			t.Fatalf("second half: %+v", d)
		}
		kept := l.Kept(t2, d)
		if err := l.Refund(ctx, t2, d); err != nil {
			t.Fatal(err)
		}
		p1 := l.AllowAt(ctx, t2, half)
		p2 := l.AllowAt(ctx, t2, limiter.Request{Session: "s", Cost: 1})
		return fmt.Sprintf("Kept %v; then cost 5: allowed %v retry %v; cost 1: allowed %v retry %v",
			kept, p1.Allowed, p1.RetryAfter, p2.Allowed, p2.RetryAfter.Round(time.Millisecond))
	}
	for name, newStore := range stores {
		t.Run(name, func(t *testing.T) {
			t1 := time.Now()
			want := run(t, newStore(), t1, t1.Add(20*time.Second))
			for _, step := range []time.Duration{-time.Hour, time.Hour} {
				got := run(t, newStore(), t1, stepWall(t, t1.Add(20*time.Second), step))
				if got != want {
					t.Errorf("refund 20s after the decision, wall clock stepped by %v meanwhile:\n got  %s\n want %s (no step)", step, got, want)
				}
			}
		})
	}
}

// TestReview17aCopiesReleasedAtOnce: copies of one Decision released from
// several goroutines at once free its slots once, whichever comes first.
func TestReview17aCopiesReleasedAtOnce(t *testing.T) {
	ctx := context.Background()
	l, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Concurrency, Scope: limiter.Session, Max: 1},
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 3},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := func(s string) limiter.Request { return limiter.Request{Session: s} }
	for i := range 200 {
		other := l.AllowAt(ctx, t0, r("other"))
		d := l.AllowAt(ctx, t0, r("d"))
		if !other.Allowed || !d.Allowed {
			t.Fatalf("round %d: allowed %v, %v; want both", i, other.Allowed, d.Allowed)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func(d limiter.Decision) {
				defer wg.Done()
				l.Release(d)
			}(d)
		}
		wg.Wait()
		// other still holds its session's only slot and one global slot.
		if x := l.AllowAt(ctx, t0, r("other")); x.Allowed {
			t.Fatalf("round %d: session other allowed a second call after d's copies were released", i)
		}
		a, b, c := l.AllowAt(ctx, t0, r("a")), l.AllowAt(ctx, t0, r("b")), l.AllowAt(ctx, t0, r("c"))
		if !a.Allowed || !b.Allowed || c.Allowed {
			t.Fatalf("round %d: with one of 3 global slots held, allowed %v %v %v; want true true false", i, a.Allowed, b.Allowed, c.Allowed)
		}
		for _, d := range []limiter.Decision{a, b, other} {
			l.Release(d)
		}
	}
}
