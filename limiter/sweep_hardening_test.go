package limiter

import (
	"context"
	"strconv"
	"testing"
	"time"
)

var reviewT0 = time.Unix(1_700_000_000, 0)

// TestReleaseSweepKeepsIdleRateKeysBounded: with a rate and a concurrency
// limit per session, a new session's release is often what pushes its
// shard over the sweep threshold; idle rate keys must still be evicted, or
// memory grows with every session ever seen.
func TestReleaseSweepKeepsIdleRateKeysBounded(t *testing.T) {
	s := NewMemoryStore()
	l, err := New([]Limit{
		{Kind: Rate, Scope: Session, Max: 10, Window: time.Millisecond},
		{Kind: Concurrency, Scope: Session, Max: 4},
	}, &Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n = 300_000
	for i := range n {
		// Each session is idle 1ms after its one call; about 10 active at once.
		at := reviewT0.Add(time.Duration(i) * 100 * time.Microsecond)
		l.Release(l.AllowAt(ctx, at, Request{Session: "k" + strconv.Itoa(i), Calls: 1}))
	}
	// Same bound as TestSweepKeepsBusyKeys: at most 65,536 entries when few
	// keys are active.
	if got := s.Len(); got > 256*256 {
		t.Errorf("%d entries held after %d sessions with ~10 active at a time, want idle keys swept (at most %d)", got, n, 256*256)
	}
}

// TestWindowBounds: a rate or spend window longer than MaxWindow is refused
// (beyond about 73 years the memory store's arithmetic would let a call
// costing more than Max through).
func TestWindowBounds(t *testing.T) {
	for _, w := range []time.Duration{MaxWindow + time.Nanosecond, 100 * 365 * 24 * time.Hour} {
		if _, err := New([]Limit{{Kind: Spend, Scope: User, Max: 100, Window: w}}, nil); err == nil {
			t.Errorf("New with a %v window: no error", w)
		}
	}
	if _, err := New([]Limit{{Kind: Rate, Scope: User, Max: 1, Window: MaxWindow}}, nil); err != nil {
		t.Errorf("New with a MaxWindow window: %v", err)
	}
}
