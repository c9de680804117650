package redislimit

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview17ReleasesAgree runs one random sequence of calls and releases,
// many of them second (or later) releases of a Decision released already,
// against the in-memory store and the Redis store, and compares every
// decision. A second release frees nothing on either: on Redis it never
// did (its slots are leases), on the memory store it freed a slot another
// call held, and the two stores then disagreed.
func TestReview17ReleasesAgree(t *testing.T) {
	c := agreeClient(t)
	limits := []limiter.Limit{
		{Kind: limiter.Concurrency, Scope: limiter.Session, Max: 1},
		{Kind: limiter.Concurrency, Scope: limiter.User, Max: 2},
		{Kind: limiter.Concurrency, Scope: limiter.Global, Tool: "write", Max: 3},
		{Kind: limiter.Rate, Scope: limiter.User, Max: 50, Window: 10 * time.Second},
	}
	mem, red := agreePair(t, c, "agree17:", limits...)
	rng := rand.New(rand.NewPCG(17, 1))
	ctx := context.Background()
	type pair struct{ m, r limiter.Decision }
	var held, released []pair
	at := time.Duration(0)
	for i := range 1500 {
		at += time.Duration(rng.IntN(200)) * time.Millisecond
		if len(held) > 0 && rng.IntN(3) == 0 {
			j := rng.IntN(len(held))
			mem.Release(held[j].m)
			red.Release(held[j].r)
			released = append(released, held[j])
			held = append(held[:j], held[j+1:]...)
		}
		if len(released) > 0 && rng.IntN(2) == 0 {
			// A stale release: a Decision released already.
			j := rng.IntN(len(released))
			mem.Release(released[j].m)
			red.Release(released[j].r)
		}
		tool := "read"
		if rng.IntN(2) == 0 {
			tool = "write"
		}
		r := limiter.Request{
			Session: "s" + strconv.Itoa(rng.IntN(5)),
			User:    "u" + strconv.Itoa(rng.IntN(2)),
			Tool:    tool,
			Calls:   1,
		}
		now := agreeT0.Add(at)
		dm, dr := mem.AllowAt(ctx, now, r), red.AllowAt(ctx, now, r)
		if om, or := agreeOutcome(dm), agreeOutcome(dr); om != or {
			t.Fatalf("step %d at t0+%v, %+v: memory %s, redis %s", i, at, r, om, or)
		}
		if dm.Allowed {
			held = append(held, pair{dm, dr})
		}
	}
}

// TestReview17LateReleaseOfExpiredLease: a holder that outlived its lease
// (a replica that hung, then came back) releases its Decision after the
// lease expired and another call took the slot; the late release frees
// nothing, and the slot stays the other call's.
func TestReview17LateReleaseOfExpiredLease(t *testing.T) {
	c := agreeClient(t)
	s := New(c, &Options{Prefix: "late17:", ClientTime: true, Lease: time.Minute, Timeout: 10 * time.Second})
	l, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}}, &limiter.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := limiter.Request{User: "u"}
	old := l.AllowAt(ctx, agreeT0, r)
	if !old.Allowed {
		t.Fatalf("first call: %s", agreeOutcome(old))
	}
	if d := l.AllowAt(ctx, agreeT0.Add(59*time.Second), r); d.Allowed {
		t.Fatalf("a second call allowed while the first one's lease runs")
	}
	next := l.AllowAt(ctx, agreeT0.Add(time.Minute+time.Millisecond), r)
	if !next.Allowed {
		t.Fatalf("after the first lease expired: %s, want allowed", agreeOutcome(next))
	}
	l.Release(old) // late
	if d := l.AllowAt(ctx, agreeT0.Add(time.Minute+2*time.Millisecond), r); d.Allowed {
		t.Errorf("after the expired holder's late release: a call allowed while the next one holds the only slot")
	}
	l.Release(next)
	if d := l.AllowAt(ctx, agreeT0.Add(time.Minute+3*time.Millisecond), r); !d.Allowed {
		t.Errorf("after the holder's release: %s, want allowed", agreeOutcome(d))
	}
}

// TestReview17PrefixesKeepLimitersApart: two limiters on one Redis with the
// same limits and keys share nothing under different prefixes (buckets,
// slots, refunds), and share everything under the same one.
func TestReview17PrefixesKeepLimitersApart(t *testing.T) {
	c := agreeClient(t)
	ctx := context.Background()
	limits := []limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Max: 2, Window: time.Minute},
		{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Minute},
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 1},
	}
	newL := func(prefix string) *limiter.Limiter {
		l, err := limiter.New(limits, &limiter.Options{Store: New(c, &Options{Prefix: prefix, ClientTime: true, Timeout: 10 * time.Second})})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	r := limiter.Request{User: "u", Calls: 1, Cost: 5}
	a, b, a2 := newL("app-a:"), newL("app-b:"), newL("app-a:")
	// a takes the only slot and one call; b, under another prefix, is not
	// affected; a2, under a's prefix, is.
	da := a.AllowAt(ctx, agreeT0, r)
	db := b.AllowAt(ctx, agreeT0, r)
	if !da.Allowed || !db.Allowed {
		t.Fatalf("first calls under prefixes app-a: and app-b:: %s, %s; want both allowed", agreeOutcome(da), agreeOutcome(db))
	}
	if d := a2.AllowAt(ctx, agreeT0, r); d.Allowed || d.Limit.Kind != limiter.Concurrency {
		t.Errorf("second limiter under app-a: while a holds the slot: %s, want denied by concurrency", agreeOutcome(d))
	}
	a.Release(da)
	b.Release(db)
	// a refunds its call: its budget is whole again, b's is not.
	if err := a.Refund(ctx, agreeT0, da); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		d := a2.AllowAt(ctx, agreeT0, r)
		if !d.Allowed {
			t.Errorf("app-a: call %d after the refund: %s, want allowed", i, agreeOutcome(d))
		}
		a2.Release(d)
	}
	d := b.AllowAt(ctx, agreeT0, r)
	if !d.Allowed {
		t.Errorf("app-b: second call: %s, want allowed", agreeOutcome(d))
	}
	b.Release(d)
	if d := b.AllowAt(ctx, agreeT0, r); d.Allowed {
		t.Errorf("app-b: third call allowed; want denied (a's refund is not b's)")
	}
}
