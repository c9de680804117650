package redislimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
)

// TestPeekBatchWritesNothing sends the store raw batches whose Peek checks
// of every kind find their keys present, absent and at exactly the limit,
// and checks that an allowed acquire writes nothing for them (the values,
// expiries and sorted sets stay as they were; an absent key stays absent)
// while it takes what its other checks take, and that a release of the
// lease frees nothing another lease holds.
func TestPeekBatchWritesNothing(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	s := redislimit.New(c, &redislimit.Options{Timeout: testTimeout, ClientTime: true, Prefix: "pk19e:"})
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	spend := limiter.Check{ID: "s", Key: "u", Kind: limiter.Spend, Max: 10, Window: time.Hour}
	rate := limiter.Check{ID: "r", Key: "u", Kind: limiter.Rate, Max: 5, Window: time.Hour}
	conc := limiter.Check{ID: "c", Key: "", Kind: limiter.Concurrency, Max: 2, N: 1}
	apply := func(b *limiter.Batch) {
		t.Helper()
		if err := s.Apply(ctx, now, b); err != nil {
			t.Fatalf("Apply(%+v): %v", b, err)
		}
	}
	// State: 7 of 10 spent, one of two slots held by lease 1.
	spent, held := spend, conc
	spent.N = 7
	apply(&limiter.Batch{Lease: 1, Checks: []limiter.Check{spent, held}})
	type state struct {
		Spend, Rate string
		SpendTTL    time.Duration
		Slots       []string
		ConcTTL     time.Duration
	}
	read := func() state {
		t.Helper()
		var st state
		st.Spend, _ = c.Get(ctx, s.Key(spend)).Result()
		st.Rate, _ = c.Get(ctx, s.Key(rate)).Result()
		st.SpendTTL = c.PTTL(ctx, s.Key(spend)).Val().Round(time.Second)
		st.Slots = c.ZRange(ctx, s.Key(conc), 0, -1).Val()
		st.ConcTTL = c.PTTL(ctx, s.Key(conc)).Val().Round(time.Second)
		return st
	}
	before := read()
	if before.Spend == "" || before.Rate != "" || len(before.Slots) != 1 {
		t.Fatalf("state before the peeks: %+v", before)
	}
	peek := func(c limiter.Check, n float64) limiter.Check {
		c.N, c.Peek = n, true
		return c
	}
	for _, tc := range []struct {
		name   string
		checks []limiter.Check
		denied int
		wait   time.Duration // negative: never
	}{
		// Exactly what is left, a rate never used, the last slot.
		{"fits_exactly", []limiter.Check{peek(spend, 3), peek(rate, 5), peek(conc, 1)}, -1, 0},
		{"over_by_one", []limiter.Check{peek(rate, 1), peek(spend, 4)}, 1, 6 * time.Minute},
		{"above_the_limit", []limiter.Check{peek(spend, 11), peek(rate, 6)}, 0, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &limiter.Batch{Lease: 2, Checks: tc.checks}
			apply(b)
			if b.Denied != tc.denied || b.RetryAfter != tc.wait && !(tc.wait < 0 && b.RetryAfter < 0) {
				t.Errorf("denied %d after %v, want %d after %v", b.Denied, b.RetryAfter, tc.denied, tc.wait)
			}
			if diff := cmp.Diff(before, read()); diff != "" {
				t.Errorf("state changed by a peek (-before +after):\n%s", diff)
			}
		})
	}
	// A peek beside a real check: only the real one is written.
	b := &limiter.Batch{Lease: 3, Checks: []limiter.Check{peek(spend, 3), held}}
	apply(b)
	after := read()
	if b.Denied != -1 || len(after.Slots) != 2 || after.Spend != before.Spend {
		t.Errorf("peek of 3 with a real slot: denied %d, state %+v; want allowed, two slots, spend as before %s", b.Denied, after, before.Spend)
	}
	// The release of a lease that took nothing frees no one's slot.
	apply(&limiter.Batch{Release: true, Lease: 2, Checks: []limiter.Check{held}})
	if got := read().Slots; len(got) != 2 {
		t.Errorf("slots after releasing the peeking lease: %v, want 2", got)
	}
}

// TestDryRunDeniedAsTheRealCall compares, at the same instants on Redis,
// a dry run's denial with a real call's: the same limit and the same
// RetryAfter, to the microsecond, whichever of several limits decides.
func TestDryRunDeniedAsTheRealCall(t *testing.T) {
	srv := testsvc.StartRedis(t)
	s := redislimit.New(newClient(t, srv.Addr), &redislimit.Options{Timeout: testTimeout, ClientTime: true, Prefix: "dr19e:"})
	l := newLimiter(t, s, nil,
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 3, Window: time.Minute},
		limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 10, Window: time.Hour},
		limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 12, Window: 24 * time.Hour},
		limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 4},
	)
	ctx := context.Background()
	t0 := time.Unix(1_700_000_000, 0)
	req := func(sess string, cost float64, dry bool) limiter.Request {
		return limiter.Request{Session: sess, User: "u", Calls: 1, Cost: cost, DryRun: dry, Write: true}
	}
	// Spend 9 of the session's 10 and of the user's 12 in session a, and
	// use up session b's calls.
	for _, r := range []limiter.Request{req("a", 9, false), req("b", 1, false), req("b", 1, false), req("b", 0.5, false)} {
		d := l.AllowAt(ctx, t0, r)
		if !d.Allowed {
			t.Fatalf("setup %+v: %+v", r, d)
		}
		l.Release(d)
	}
	for _, tc := range []struct {
		name string
		at   time.Duration
		r    limiter.Request
	}{
		{"session_spend", time.Second, req("a", 2, false)}, // session 10/h: 11 over
		{"user_spend", time.Second, req("c", 2, false)},    // user 12/day: 11.5 + 2
		{"never", time.Second, req("a", 13, false)},        // above both limits
		{"rate", 2 * time.Second, req("b", 0.1, false)},    // session b's calls
		{"rate_and_spend", 3 * time.Second, req("b", 9, false)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dry := tc.r
			dry.DryRun = true
			dd := l.AllowAt(ctx, t0.Add(tc.at), dry)
			l.Release(dd)
			rd := l.AllowAt(ctx, t0.Add(tc.at), tc.r)
			l.Release(rd)
			if rd.Allowed {
				t.Fatalf("the real call was allowed: the case tests nothing")
			}
			type out struct {
				Allowed    bool
				Limit      limiter.Limit
				RetryAfter time.Duration
				Err        error
			}
			if diff := cmp.Diff(out{rd.Allowed, rd.Limit, rd.RetryAfter, rd.Err}, out{dd.Allowed, dd.Limit, dd.RetryAfter, dd.Err}); diff != "" {
				t.Errorf("dry run vs the real call at the same instant (-real +dry):\n%s", diff)
			}
		})
	}
}
