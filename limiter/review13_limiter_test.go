package limiter_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview13HugeMaxKept: under a spend limit whose Max is near the
// largest float64, a call costing Max is allowed (window × cost overflowed
// to +Inf, which read as "never fits", before), and Kept reports, half a
// window later, that half of its cost stays taken (it read +Inf as the
// increment and reported 0).
func TestReview13HugeMaxKept(t *testing.T) {
	for _, max := range []float64{1e300, math.MaxFloat64} {
		l, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.Session, Max: max, Window: time.Minute}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := l.AllowAt(context.Background(), t0, limiter.Request{Session: "s", Cost: max})
		if !d.Allowed {
			t.Fatalf("Max %v: a call costing Max: allowed=false, limit %v, retry %v; want allowed", max, d.Limit, d.RetryAfter)
		}
		if got := l.Kept(t0.Add(30*time.Second), d); got != 0.5 {
			t.Errorf("Max %v: Kept(t0+30s) of a call costing Max = %v, want 0.5", max, got)
		}
		if err := l.Refund(context.Background(), t0.Add(30*time.Second), d); err != nil {
			t.Fatal(err)
		}
		// Half the window's refill plus the half refunded: the bucket is
		// full again, and no fuller.
		if d := l.AllowAt(context.Background(), t0.Add(30*time.Second), limiter.Request{Session: "s", Cost: max}); !d.Allowed {
			t.Errorf("Max %v: after the refund, a call costing Max: denied, retry %v", max, d.RetryAfter)
		}
		if d := l.AllowAt(context.Background(), t0.Add(30*time.Second), limiter.Request{Session: "s", Cost: max / 1e6}); d.Allowed {
			t.Errorf("Max %v: after the refund and a call costing Max, another call allowed", max)
		}
	}
}

// TestReview13ConcurrentRefunds takes and refunds from many goroutines at
// one instant: each refund gives back exactly what its decision took, so
// at the end the bucket holds Max again, and never more.
func TestReview13ConcurrentRefunds(t *testing.T) {
	l, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Max: 4, Window: time.Minute},
		{Kind: limiter.Spend, Scope: limiter.Global, Max: 10, Window: time.Minute},
		{Kind: limiter.Concurrency, Scope: limiter.User, Max: 3},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := limiter.Request{User: "u", Calls: 1, Cost: 2.5}
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				d := l.AllowAt(ctx, t0, r)
				if d.Allowed {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
				if err := l.Refund(ctx, t0, d); err != nil {
					t.Errorf("Refund: %v", err)
				}
				l.Release(d)
			}
		}()
	}
	wg.Wait()
	if allowed < 4 {
		t.Fatalf("%d calls allowed in all, want many (every refund gives its units back)", allowed)
	}
	var got []bool
	for range 5 {
		d := l.AllowAt(ctx, t0, limiter.Request{User: "v", Calls: 1, Cost: 2.5})
		got = append(got, d.Allowed)
		l.Release(d)
	}
	// The global spend (10) takes exactly four calls of 2.5.
	if want := []bool{true, true, true, true, false}; !equalBools(got, want) {
		t.Errorf("after concurrent take-and-refund, five calls: %v, want %v", got, want)
	}
	// And user u has its four calls and its three slots.
	for i := range 3 {
		d := l.AllowAt(ctx, t0, limiter.Request{User: "u", Calls: 1})
		if !d.Allowed {
			t.Errorf("user u, call %d after all refunds and releases: denied by %v", i, d.Limit)
		}
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
