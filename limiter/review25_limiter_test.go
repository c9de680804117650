package limiter_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview25CapsHoldUnderContention has many goroutines reserve, refund,
// release (some decisions twice, from another goroutine) and sweep on a few
// sessions and users, while others flood the store with distinct keys so
// that it sweeps, at one instant (no refill): the calls running never
// exceed any in-flight cap, the calls run (allowed, not refunded) never
// exceed the rate cap, nor their cost the spend cap, and once every call
// has ended every slot is free again, and only those.
func TestReview25CapsHoldUnderContention(t *testing.T) {
	store := limiter.NewMemoryStore()
	review25Contention(t, store, time.Unix(1_700_000_000, 0), func() { store.Sweep(time.Unix(1_700_000_000, 0)) })
}

// review25Contention is TestReview25CapsHoldUnderContention on store, at now.
func review25Contention(t *testing.T, store limiter.Store, now time.Time, sweep func()) {
	const (
		sessions, users          = 4, 2
		rateMax, spendMax        = 60, 45
		sessSlots, userSlots     = 2, 3
		globalSlots, workers, n  = 5, 12, 300
		floodKeys, floodRoutines = 3000, 2
	)
	l, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Tool: "work", Max: rateMax, Window: time.Hour},
		{Kind: limiter.Spend, Scope: limiter.User, Tool: "work", Max: spendMax, Window: time.Hour},
		{Kind: limiter.Concurrency, Scope: limiter.Session, Max: sessSlots},
		{Kind: limiter.Concurrency, Scope: limiter.User, Max: userSlots},
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: globalSlots},
	}, &limiter.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var (
		runSess  [sessions]atomic.Int64
		runUser  [users]atomic.Int64
		runAll   atomic.Int64
		ranSess  [sessions]atomic.Int64 // calls allowed and not refunded
		spentU   [users]atomic.Int64    // their cost, in quarter units
		bad      atomic.Int64
		again    = make(chan limiter.Decision, workers*n)
		wg, fwg  sync.WaitGroup
		flooding atomic.Bool
	)
	flooding.Store(true)
	for f := range floodRoutines {
		fwg.Go(func() {
			for i := 0; flooding.Load(); i++ {
				k := fmt.Sprintf("flood-%d-%d", f, i%floodKeys+i/floodKeys*floodKeys)
				l.Release(l.AllowAt(ctx, now, limiter.Request{Session: k, User: k, Tool: "flood", Calls: 1, Cost: 1}))
				if i%500 == 0 && sweep != nil {
					sweep()
				}
			}
		})
	}
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 25))
			for range n {
				s, u := rng.IntN(sessions), rng.IntN(users)
				quarters := int64(1 + rng.IntN(4))
				d := l.AllowAt(ctx, now, limiter.Request{
					Session: fmt.Sprint("s", s), User: fmt.Sprint("u", u), Tool: "work",
					Calls: 1, Cost: float64(quarters) / 4,
				})
				if d.Err != nil {
					t.Errorf("AllowAt: %v", d.Err)
					return
				}
				if !d.Allowed {
					continue
				}
				if runSess[s].Add(1) > sessSlots || runUser[u].Add(1) > userSlots || runAll.Add(1) > globalSlots {
					bad.Add(1)
				}
				refund := rng.IntN(3) == 0
				if !refund {
					ranSess[s].Add(1)
					spentU[u].Add(quarters)
				}
				runtimeYield(rng)
				if refund {
					if err := l.Refund(ctx, now, d); err != nil {
						t.Errorf("Refund: %v", err)
					}
				}
				runSess[s].Add(-1)
				runUser[u].Add(-1)
				runAll.Add(-1)
				l.Release(d)
				if rng.IntN(4) == 0 {
					again <- d // released again, later, by another goroutine
				}
				select {
				case old := <-again:
					l.Release(old)
				default:
				}
			}
		})
	}
	wg.Wait()
	flooding.Store(false)
	fwg.Wait()
	close(again)
	for d := range again {
		l.Release(d)
	}
	if b := bad.Load(); b > 0 {
		t.Errorf("%d times more calls ran at once than an in-flight cap allows", b)
	}
	for s := range sessions {
		if got := ranSess[s].Load(); got > rateMax {
			t.Errorf("session s%d ran %d calls, the rate cap is %d", s, got, rateMax)
		}
	}
	for u := range users {
		if got := float64(spentU[u].Load()) / 4; got > spendMax {
			t.Errorf("user u%d spent %v, the spend cap is %d", u, got, spendMax)
		}
	}
	// Every slot is free again, and only those: the global cap's worth of
	// calls on fresh sessions and users, then a denial.
	var held []limiter.Decision
	for i := range globalSlots {
		d := l.AllowAt(ctx, now, limiter.Request{Session: fmt.Sprint("end-s", i), User: fmt.Sprint("end-u", i), Tool: "end"})
		if !d.Allowed {
			t.Fatalf("call %d after every call ended: %+v, want allowed (a slot leaked)", i, d)
		}
		held = append(held, d)
	}
	if d := l.AllowAt(ctx, now, limiter.Request{Session: "end-x", User: "end-x", Tool: "end"}); d.Allowed || d.Limit.Scope != limiter.Global {
		t.Errorf("call past the global cap: %+v, want denied by the global in-flight cap (a release freed another call's slot)", d)
	}
	for _, d := range held {
		l.Release(d)
	}
}

// runtimeYield lets other goroutines run while a call is in flight, now and
// then.
func runtimeYield(rng *rand.Rand) {
	if rng.IntN(2) == 0 {
		time.Sleep(time.Duration(rng.IntN(50)) * time.Microsecond)
	}
}

// TestReview25ZeroMemoryStoreRefused: a MemoryStore not made by
// NewMemoryStore (the zero value, documented as not usable, or a nil
// pointer) is refused by New and by its Apply with an error, rather than
// accepted as a configuration whose every call then panicked (maphash's
// uninitialized seed, a nil dereference) on the request path.
func TestReview25ZeroMemoryStoreRefused(t *testing.T) {
	lim := []limiter.Limit{{Kind: limiter.Rate, Scope: limiter.Session, Max: 5, Window: time.Minute}}
	for _, s := range []*limiter.MemoryStore{new(limiter.MemoryStore), nil} {
		if _, err := limiter.New(lim, &limiter.Options{Store: s}); err == nil {
			t.Errorf("New with store %p (not made by NewMemoryStore): nil error", s)
		}
	}
	var zero limiter.MemoryStore
	b := &limiter.Batch{Checks: []limiter.Check{{ID: lim[0].ID(), Kind: limiter.Rate, Max: 5, Window: time.Minute, N: 1}}}
	if err := zero.Apply(context.Background(), time.Now(), b); err == nil {
		t.Errorf("Apply on the zero MemoryStore: nil error (denied %d)", b.Denied)
	}
}
