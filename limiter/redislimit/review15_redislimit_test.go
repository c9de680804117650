package redislimit_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
	"github.com/redis/go-redis/v9"
)

// TestReview15DoneContextNeverFailsOpen: with both fail-open options set, a
// call whose caller gave up (its context cancelled before the decision, or
// its deadline passing while a hung Redis decides) is denied; only a store
// that fails under a live context lets calls through. The limiter used to
// allow the first two, uncharged: a client that disconnects right after
// sending a write got it past the spend cap.
func TestReview15DoneContextNeverFailsOpen(t *testing.T) {
	srv := testsvc.StartRedis(t)
	// A client set as the package doc advises: without ContextTimeoutEnabled,
	// go-redis may send a decision's script after its caller was answered
	// (its connection's handshake done once Redis came back, the script
	// loaded meanwhile by an abandon's EVAL), and what it takes stays
	// taken (see the package doc), which the last check below would see.
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 16, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	l := newLimiter(t, redislimit.New(c, &redislimit.Options{Timeout: 300 * time.Millisecond}),
		&limiter.Options{FailOpenReads: true, FailOpenWrites: true},
		limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour},
		limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.User, Max: 4},
	)
	req := limiter.Request{User: "u", Calls: 1, Cost: 10, Write: true}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	d := l.AllowAt(cancelled, time.Now(), req)
	l.Release(d)
	if d.Allowed || !errors.Is(d.Err, limiter.ErrStoreUnavailable) || !errors.Is(d.Err, context.Canceled) {
		t.Errorf("cancelled context: allowed=%v err=%v; want denied, unwrapping to ErrStoreUnavailable and context.Canceled", d.Allowed, d.Err)
	}

	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := srv.Resume(); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer resume()
	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	d = l.AllowAt(short, time.Now(), req)
	l.Release(d)
	if d.Allowed || !errors.Is(d.Err, context.DeadlineExceeded) {
		t.Errorf("deadline passed while Redis hung: allowed=%v err=%v; want denied, unwrapping to context.DeadlineExceeded", d.Allowed, d.Err)
	}
	if d.Err != nil && strings.Contains(d.Err.Error(), "within 300ms") {
		t.Errorf("the caller's 50ms deadline passed: err = %q, which blames the store's 300ms timeout", d.Err)
	}
	d = l.AllowAt(context.Background(), time.Now(), req)
	l.Release(d)
	if !d.Allowed || !errors.Is(d.Err, limiter.ErrStoreUnavailable) {
		t.Errorf("Redis hung, live context: allowed=%v err=%v; want allowed (fail open as configured) with ErrStoreUnavailable", d.Allowed, d.Err)
	}
	resume()

	// Nothing of the refused calls was charged: the whole budget is there.
	d = l.AllowAt(context.Background(), time.Now(), req)
	l.Release(d)
	if !d.Allowed || d.Err != nil {
		t.Errorf("after Redis came back: allowed=%v limit=%v err=%v; want the full budget", d.Allowed, d.Limit, d.Err)
	}
}

// TestReview15EveryKeyExpires: after every kind of operation (allowed and
// denied acquires, releases, refunds, resent refunds, abandons of
// reservations whose reply was lost), on keys holding hash tags and
// separators, every key the store wrote carries an expiry.
func TestReview15EveryKeyExpires(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	ctx := context.Background()
	rs := redislimit.New(c, &redislimit.Options{Lease: 30 * time.Second, Timeout: testTimeout})
	lost := 0
	// Every fourth reservation is carried out but its reply is "lost":
	// the limiter then abandons its lease in the background.
	flaky := limiter.StoreFunc(func(ctx context.Context, now time.Time, b *limiter.Batch) error {
		err := rs.Apply(ctx, now, b)
		if err == nil && !b.Release && !b.Refund {
			if lost++; lost%4 == 0 {
				return errors.New("reply lost")
			}
		}
		return err
	})
	limits := []limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 3, Window: time.Minute},
		{Kind: limiter.Spend, Scope: limiter.User, Max: 20, Window: time.Hour, Tool: "re{fu}nd"},
		{Kind: limiter.Concurrency, Scope: limiter.User, Max: 2},
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 5},
	}
	stores := map[string]limiter.Store{"real": rs, "flaky": leasingStore{flaky}}
	for name, st := range stores {
		l := newLimiter(t, st, nil, limits...)
		for i := range 60 {
			r := limiter.Request{
				Session: "s{" + strconv.Itoa(i%5) + "}:x", User: "}{u" + strconv.Itoa(i%3),
				Tool: "re{fu}nd", Calls: 1, Cost: float64(i % 7), Write: true,
			}
			d := l.AllowAt(ctx, time.Now(), r)
			if d.Allowed && d.Err == nil && i%2 == 0 {
				if err := l.Refund(ctx, time.Now(), d); err != nil {
					t.Fatalf("%s: Refund: %v", name, err)
				}
			}
			if i%3 != 0 {
				l.Release(d)
			} // else: never released (a crashed replica): the lease must expire
		}
	}
	time.Sleep(300 * time.Millisecond) // the background abandons (one try each when Redis is up)
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) < 5 {
		t.Fatalf("only %d keys written: %q", len(keys), keys)
	}
	for _, k := range keys {
		ttl, err := c.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl <= 0 {
			t.Errorf("key %q has PTTL %v: no expiry", k, ttl)
		}
	}
}

// leasingStore makes a wrapped Redis store a lease store again, so that the
// limiter abandons the leases of reservations whose reply was lost.
type leasingStore struct{ limiter.Store }

func (leasingStore) LeasesSlots() bool { return true }
func (leasingStore) Refunds() bool     { return true }
