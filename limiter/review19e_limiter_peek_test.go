package limiter_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestMemoryPeekBatchOfEveryKind sends the memory store raw batches whose
// Peek checks of every kind (a Concurrency one included, which the
// Limiter never sends) find their keys present, absent and at exactly the
// limit, beside real checks and more checks than the store keeps on its
// stack, and checks that they deny as real checks would and take
// nothing: no entry, no units, no slot, no lease whose release frees
// another's slot.
func TestMemoryPeekBatchOfEveryKind(t *testing.T) {
	s := limiter.NewMemoryStore()
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	spend := limiter.Check{ID: "s", Key: "u", Kind: limiter.Spend, Max: 10, Window: time.Hour}
	rate := limiter.Check{ID: "r", Key: "u", Kind: limiter.Rate, Max: 5, Window: time.Hour}
	conc := limiter.Check{ID: "c", Kind: limiter.Concurrency, Max: 2, N: 1}
	apply := func(b *limiter.Batch) {
		t.Helper()
		if err := s.Apply(ctx, now, b); err != nil {
			t.Fatalf("Apply(%+v): %v", b, err)
		}
	}
	spent := spend
	spent.N = 7
	apply(&limiter.Batch{Lease: 1, Checks: []limiter.Check{spent, conc}})
	if n := s.Len(); n != 2 {
		t.Fatalf("Len after the setup = %d, want 2", n)
	}
	peek := func(c limiter.Check, n float64) limiter.Check {
		c.N, c.Peek = n, true
		return c
	}
	many := []limiter.Check{peek(spend, 3)}
	for i := range 10 {
		c := peek(rate, 1)
		c.Key = string(rune('a' + i))
		many = append(many, c)
	}
	for _, tc := range []struct {
		name   string
		checks []limiter.Check
		denied int
		never  bool
		wait   time.Duration
	}{
		{"fits_exactly", []limiter.Check{peek(spend, 3), peek(rate, 5), peek(conc, 1)}, -1, false, 0},
		{"over_by_one", []limiter.Check{peek(rate, 1), peek(spend, 4)}, 1, false, 6 * time.Minute},
		{"above_the_limit", []limiter.Check{peek(spend, 11), peek(rate, 6)}, 0, true, 0},
		{"more_than_the_stack", many, -1, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &limiter.Batch{Lease: 2, Checks: tc.checks}
			apply(b)
			if b.Denied != tc.denied || tc.never != (b.RetryAfter < 0) || !tc.never && b.RetryAfter != tc.wait {
				t.Errorf("denied %d after %v, want %d after %v (never %v)", b.Denied, b.RetryAfter, tc.denied, tc.wait, tc.never)
			}
			if n := s.Len(); n != 2 {
				t.Errorf("Len after the peeks = %d, want 2: a peek made an entry", n)
			}
		})
	}
	// The release of the lease that peeked frees no one's slot.
	apply(&limiter.Batch{Release: true, Lease: 2, Checks: []limiter.Check{conc}})
	// What is left is all there: 3 units, 5 calls and one slot, no more.
	left := []limiter.Check{spend, rate, conc}
	left[0].N, left[1].N = 3, 5
	b := &limiter.Batch{Lease: 3, Checks: left}
	apply(b)
	if b.Denied != -1 {
		t.Errorf("what is left after the peeks: denied %d after %v", b.Denied, b.RetryAfter)
	}
	b = &limiter.Batch{Lease: 4, Checks: []limiter.Check{conc}}
	apply(b)
	if b.Denied != 0 {
		t.Errorf("a third slot of two: denied %d, want 0", b.Denied)
	}
}
