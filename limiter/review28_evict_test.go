package limiter_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview28FloodKeepsVictimState: a caller floods the memory store with
// distinct session and user keys, each going idle a moment after its call,
// so that every shard is swept many times over. The victim's spent user
// budget, the global budget and the victim's held in-flight slot survive
// every sweep: the victim is still denied, by the same limits, and its
// release after the flood frees its own slot and no other.
func TestReview28FloodKeepsVictimState(t *testing.T) {
	n := 300_000
	if raceEnabled {
		n = 60_000
	}
	s := limiter.NewMemoryStore()
	l, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 10, Window: time.Second},
		{Kind: limiter.Spend, Scope: limiter.User, Tool: "pay", Max: 10, Window: time.Hour},
		{Kind: limiter.Spend, Scope: limiter.Global, Max: 1e7, Window: limiter.MaxWindow},
		{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1},
	}, &limiter.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	victim := limiter.Request{Session: "victim-session", User: "victim", Tool: "pay", Calls: 1, Cost: 10}
	held := l.AllowAt(ctx, t0, victim)
	if !held.Allowed {
		t.Fatalf("victim's first call denied: %v", held.Limit)
	}
	// The other calls of the flood hold a slot of their own user while
	// they run; each key is idle 100ms after its call.
	for i := range n {
		at := t0.Add(time.Duration(i) * time.Millisecond)
		k := "flood-" + strconv.Itoa(i)
		d := l.AllowAt(ctx, at, limiter.Request{Session: k, User: k, Tool: "browse", Calls: 1, Cost: 5})
		if !d.Allowed {
			t.Fatalf("flood call %d denied: %v", i, d.Limit)
		}
		l.Release(d)
	}
	end := t0.Add(time.Duration(n) * time.Millisecond)
	if got := s.Len(); got > 256*256 {
		t.Errorf("%d entries after %d keys with about 100 active at once, want at most %d", got, n, 256*256)
	}
	// A call without cost: only the victim's held slot can deny it.
	d := l.AllowAt(ctx, end, limiter.Request{Session: "victim-2", User: "victim", Calls: 1})
	if d.Allowed || d.Limit.Kind != limiter.Concurrency {
		t.Errorf("victim's second call while the first holds its slot = allowed %v by %v, want denied by the concurrency limit", d.Allowed, d.Limit)
	}
	l.Release(held)
	// The spend the victim took at t0 refills at t0+1h.
	d = l.AllowAt(ctx, end, limiter.Request{Session: "victim-3", User: "victim", Tool: "pay", Calls: 1, Cost: 1})
	if d.Allowed || d.Limit.Kind != limiter.Spend || d.Limit.Scope != limiter.User {
		t.Fatalf("victim's spend after the flood = allowed %v by %v, want denied by the user spend limit", d.Allowed, d.Limit)
	}
	if want := t0.Add(6 * time.Minute).Sub(end); d.RetryAfter < want-time.Second || d.RetryAfter > want {
		t.Errorf("RetryAfter = %v, want about %v", d.RetryAfter, want)
	}
	// The global budget holds what the flood took, 5 a call, and the
	// victim's 10 (it refills by about 2 units over the flood's 5 minutes):
	// a dry run of a little more than is left is denied, and one of a
	// little less is not.
	left := 1e7 - float64(n)*5 - 10
	for _, tt := range []struct {
		cost  float64
		allow bool
	}{{left + 5, false}, {left - 5, true}} {
		d = l.AllowAt(ctx, end, limiter.Request{Session: "other", User: "other", Tool: "browse", Cost: tt.cost, DryRun: true})
		if d.Allowed != tt.allow || !d.Allowed && d.Limit.Scope != limiter.Global {
			t.Errorf("dry run of %g with %g left globally = allowed %v by %v, want allowed %v", tt.cost, left, d.Allowed, d.Limit, tt.allow)
		}
		l.Release(d)
	}
	// The slot freed is the victim's: a new call of the victim gets it,
	// and one more does not.
	d = l.AllowAt(ctx, end, limiter.Request{Session: "victim-4", User: "victim", Calls: 1})
	if !d.Allowed {
		t.Fatalf("victim's call after its release denied by %v", d.Limit)
	}
	if d2 := l.AllowAt(ctx, end, limiter.Request{Session: "victim-5", User: "victim", Calls: 1}); d2.Allowed {
		t.Errorf("a second call of the victim holding its one slot was allowed: a release after the flood freed more than its slot")
	}
	l.Release(d)
}
