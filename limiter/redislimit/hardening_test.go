package redislimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
)

// TestLostAcquireReplyLeaksNoSlot checks a concurrency slot acquired while
// Redis is slow (paused past the store's timeout): the limiter reports a
// store failure and the call is denied, so the caller has nothing to
// Release, but the script still runs once Redis catches up. Without the
// limiter abandoning the lease, the slot would stay held for the whole lease
// (5 minutes by default) and, with Max 1, lock the user out although no call
// of theirs is in flight.
func TestLostAcquireReplyLeaksNoSlot(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	s := redislimit.New(c, &redislimit.Options{Timeout: 100 * time.Millisecond})
	l := newLimiter(t, s, nil, limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1})
	ctx := context.Background()
	req := limiter.Request{User: "alice", Calls: 1}
	// Warm up: the script is now cached in Redis (EVALSHA succeeds).
	warm := l.AllowAt(ctx, time.Now(), limiter.Request{User: "bob", Calls: 1})
	if !warm.Allowed {
		t.Fatalf("warm-up call denied: %+v", warm)
	}
	l.Release(warm)

	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	d := l.AllowAt(ctx, time.Now(), req)
	if d.Err == nil || d.Allowed {
		srv.Resume()
		t.Fatalf("AllowAt while Redis hung = %+v, want a store error and a denial", d)
	}
	l.Release(d) // what a caller does on every way out; d holds nothing
	time.Sleep(300 * time.Millisecond)
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // let the queued script run

	// The limiter abandons the lease in the background: within seconds the
	// slot is free, whichever of the late acquire and the release came first.
	var d2 limiter.Decision
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if d2 = l.AllowAt(ctx, time.Now(), req); d2.Allowed {
			break
		}
	}
	defer l.Release(d2)
	if !d2.Allowed {
		t.Errorf("after Redis recovered, AllowAt = allowed %v (limit %v, err %v), want allowed: "+
			"no call is in flight but the timed-out acquire left a slot held until its lease expires", d2.Allowed, d2.Limit, d2.Err)
	}
	// And the slot counts again: a second call is refused.
	if d3 := l.AllowAt(ctx, time.Now(), req); d3.Allowed {
		l.Release(d3)
		t.Error("two calls in flight under a concurrency limit of 1")
	}
}

// TestPositiveCostIsNeverFree checks that a call whose share of a bucket
// (Window*n/Max) is under the store's time resolution (1 µs on Redis, 1 ns
// in memory) still takes a tick: rounded down to zero, any number of such
// calls would pass a full bucket. One call fills the bucket exactly; a call
// of a fraction of a tick must then be refused, in both stores alike.
func TestPositiveCostIsNeverFree(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	for name, lim := range map[string]limiter.Limit{
		// One unit per µs on Redis, per ns in memory.
		"redis":  {Kind: limiter.Spend, Scope: limiter.User, Max: 3.6e9, Window: time.Hour},
		"memory": {Kind: limiter.Spend, Scope: limiter.User, Max: 3.6e12, Window: time.Hour},
	} {
		store := limiter.Store(limiter.NewMemoryStore())
		if name == "redis" {
			store = redislimit.New(c, &redislimit.Options{ClientTime: true, Timeout: 5 * time.Second})
		}
		l := newLimiter(t, store, nil, lim)
		t0 := time.Unix(1_700_000_000, 0)
		ctx := context.Background()
		if d := l.AllowAt(ctx, t0, limiter.Request{User: "u", Cost: lim.Max}); !d.Allowed || d.Err != nil {
			t.Fatalf("%s: a call of Max units into an empty bucket: %+v", name, d)
		}
		if d := l.AllowAt(ctx, t0, limiter.Request{User: "u", Cost: 0.5}); d.Allowed || d.Err != nil {
			t.Errorf("%s: a call of half a tick passed a full bucket: %+v", name, d)
		}
	}
}
