package redislimit_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
)

// TestRefundServerTime refunds at the Redis server's clock: a refund
// right after a reservation of a fresh key deletes it (the bucket is full
// again), and one that leaves the bucket in debt sets the key's expiry to
// the new theoretical arrival time.
func TestRefundServerTime(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	s := redislimit.New(c, &redislimit.Options{Timeout: testTimeout})
	lim := limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 2, Window: time.Hour}
	l := newLimiter(t, s, nil, lim)
	ctx := context.Background()
	r := limiter.Request{Session: "a", Calls: 1}
	key := s.Key(limiter.Check{ID: lim.ID(), Key: "a"})

	d := l.AllowAt(ctx, time.Time{}, r)
	if !d.Allowed {
		t.Fatalf("first call denied: %v %v", d.Limit, d.Err)
	}
	if err := l.Refund(ctx, time.Time{}, d); err != nil {
		t.Fatalf("Refund: %v", err)
	}
	if n, err := c.Exists(ctx, key).Result(); err != nil || n != 0 {
		t.Errorf("EXISTS %s after refunding the only call = %d, %v; want 0 (a full bucket is no key)", key, n, err)
	}

	for i := range 2 {
		if d = l.AllowAt(ctx, time.Time{}, r); !d.Allowed {
			t.Fatalf("call %d denied: %v %v", i, d.Limit, d.Err)
		}
	}
	if err := l.Refund(ctx, time.Time{}, d); err != nil {
		t.Fatalf("Refund: %v", err)
	}
	// One call of 30 minutes is left in the bucket.
	if ttl, err := c.PTTL(ctx, key).Result(); err != nil || ttl <= 25*time.Minute || ttl > 30*time.Minute {
		t.Errorf("PTTL %s after refunding one of two calls = %v, %v; want in (25m, 30m]", key, ttl, err)
	}
	if d := l.AllowAt(ctx, time.Time{}, r); !d.Allowed {
		t.Errorf("call after the refund denied: %v %v", d.Limit, d.Err)
	}
	if d := l.AllowAt(ctx, time.Time{}, r); d.Allowed || d.Limit.Kind != limiter.Rate {
		t.Errorf("one call more: allowed=%v limit=%v, want a rate denial", d.Allowed, d.Limit)
	}
}

// TestRefundClientTime checks the state a refund writes, at the limiter's
// time: the TAT moved back by one increment less the time since the
// decision, and an expiry at it; a full increment after the decision, the
// TAT left as it is; and a key Redis no longer has staying absent.
func TestRefundClientTime(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	s := redislimit.New(c, &redislimit.Options{ClientTime: true, Timeout: testTimeout})
	// One call takes an hour of the bucket.
	lim := limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 10, Window: 10 * time.Hour}
	l := newLimiter(t, s, nil, lim)
	ctx := context.Background()
	t0 := time.Unix(1_700_000_000, 0)
	r := limiter.Request{Session: "a", Calls: 1}
	key := s.Key(limiter.Check{ID: lim.ID(), Key: "a"})

	var d limiter.Decision
	for range 3 {
		d = l.AllowAt(ctx, t0, r)
	}
	if err := l.Refund(ctx, t0.Add(30*time.Minute), d); err != nil {
		t.Fatalf("Refund: %v", err)
	}
	tat, err := c.Get(ctx, key).Int64()
	if want := t0.Add(150 * time.Minute).UnixMicro(); err != nil || tat != want {
		t.Errorf("GET %s after refunding one of 3 calls 30 minutes later = %d, %v; want %d (t0+2h30m: half an hour of its hour back)", key, tat, err, want)
	}
	if ttl, err := c.PTTL(ctx, key).Result(); err != nil || ttl <= 119*time.Minute || ttl > 120*time.Minute {
		t.Errorf("PTTL %s = %v, %v; want in (119m, 120m]: the TAT is two hours after the refund", key, ttl, err)
	}
	// An hour after the decision, its increment, the bucket may have
	// refilled since: a refund gives nothing back.
	if err := l.Refund(ctx, t0.Add(time.Hour), d); err != nil {
		t.Fatalf("Refund: %v", err)
	}
	if tat, err := c.Get(ctx, key).Int64(); err != nil || tat != t0.Add(150*time.Minute).UnixMicro() {
		t.Errorf("GET %s after a refund an increment after the decision = %d, %v; want it unchanged (t0+2h30m)", key, tat, err)
	}

	// A key evicted or expired is a full bucket: a refund leaves it absent.
	if err := c.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	if err := l.Refund(ctx, t0.Add(time.Hour), d); err != nil {
		t.Fatalf("Refund: %v", err)
	}
	if n, err := c.Exists(ctx, key).Result(); err != nil || n != 0 {
		t.Errorf("EXISTS %s after refunding to an absent key = %d, %v; want 0", key, n, err)
	}
}

// TestRefundOneRoundTrip checks that a refund is one EVALSHA, running only
// the commands of the refund branch.
func TestRefundOneRoundTrip(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	var sent atomic.Int64
	c.AddHook(countHook{&sent})
	l := newLimiter(t, redislimit.New(c, &redislimit.Options{Timeout: testTimeout}), nil,
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 1e6, Window: time.Minute},
		limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 1e6, Window: time.Minute},
		limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 100},
	)
	ctx := context.Background()
	const n = 50
	var ds []limiter.Decision
	for i := range n {
		d := l.AllowAt(ctx, time.Now(), limiter.Request{Session: "s", User: "u" + strconv.Itoa(i%2), Calls: 1, Cost: 2})
		if !d.Allowed {
			t.Fatalf("denied: %v %v", d.Limit, d.Err)
		}
		ds = append(ds, d)
	}
	info := newClient(t, srv.Addr)
	before := commandStats(t, info)
	sent.Store(0)
	for _, d := range ds {
		if err := l.Refund(ctx, time.Now(), d); err != nil {
			t.Fatalf("Refund: %v", err)
		}
	}
	after := commandStats(t, info)
	got := map[string]int64{}
	for cmd, calls := range after {
		if delta := calls - before[cmd]; delta != 0 && cmd != "info" {
			got[cmd] = delta
		}
	}
	if got["evalsha"] != n || got["eval"] != 0 {
		t.Errorf("commandstats delta %v: want evalsha=%d (one per refund), eval=0", got, n)
	}
	if s := sent.Load(); s != n {
		t.Errorf("client sent %d commands for %d refunds, want %d", s, n, n)
	}
	for cmd := range got {
		switch cmd {
		case "evalsha", "time", "get", "set", "del":
		default:
			t.Errorf("unexpected command %q ran (%d times)", cmd, got[cmd])
		}
	}
	for _, d := range ds {
		l.Release(d)
	}
}

// TestRefundInvalidBatch checks that a batch both releasing and refunding
// is refused without a round trip.
func TestRefundInvalidBatch(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	var sent atomic.Int64
	c.AddHook(countHook{&sent})
	s := redislimit.New(c, &redislimit.Options{Timeout: testTimeout})
	b := &limiter.Batch{Release: true, Refund: true, Checks: []limiter.Check{
		{ID: "rate", Key: "k", Kind: limiter.Rate, Max: 1, Window: time.Minute, N: 1},
	}}
	if err := s.Apply(context.Background(), time.Now(), b); err == nil {
		t.Error("Apply of a batch with Release and Refund: nil error, want one")
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("%d commands sent for an invalid batch, want 0", n)
	}
}

// TestRefundUnavailable checks that a refund Redis does not answer is
// reported as ErrStoreUnavailable.
func TestRefundUnavailable(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	l := newLimiter(t, redislimit.New(c, &redislimit.Options{Timeout: 100 * time.Millisecond}), nil,
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 10, Window: time.Minute})
	ctx := context.Background()
	d := l.AllowAt(ctx, time.Now(), limiter.Request{Session: "a", Calls: 1})
	if !d.Allowed {
		t.Fatalf("denied: %v %v", d.Limit, d.Err)
	}
	srv.Stop()
	err := l.Refund(ctx, time.Now(), d)
	if !errors.Is(err, limiter.ErrStoreUnavailable) {
		t.Errorf("Refund with Redis stopped: %v, want an error that unwraps to ErrStoreUnavailable", err)
	}
	t.Logf("error reported: %v", err)
}
