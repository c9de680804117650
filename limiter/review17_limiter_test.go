package limiter_test

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/mcpguard/mcpguard/limiter"
)

// stepWall returns t, a reading of time.Now, as a later reading would be
// after the wall clock was stepped by d (whole seconds): its wall time moves
// by d and its monotonic reading stays. The operating system does this to
// a process on an NTP step, a manual clock change or a resumed VM; a test
// cannot step the real clock, so it edits the reading (time.Time's layout
// with a monotonic reading: seconds since 1885 in bits 30-62 of its first
// word). The checks below fail if that layout ever changes.
func stepWall(tb testing.TB, t time.Time, d time.Duration) time.Time {
	tb.Helper()
	type reading struct {
		wall uint64
		ext  int64
		loc  *time.Location
	}
	s := t
	r := (*reading)(unsafe.Pointer(&s))
	r.wall = uint64(int64(r.wall) + int64(d/time.Second)<<30)
	if got := time.Duration(s.UnixNano() - t.UnixNano()); got != d {
		tb.Fatalf("stepWall: wall time moved by %v, want %v", got, d)
	}
	if got := s.Sub(t); got != 0 {
		tb.Fatalf("stepWall: monotonic reading moved by %v, want 0", got)
	}
	return s
}

// TestReview17WallClockStep: the in-memory store decided on the wall time
// of the times it was given (time.Now in the Guard and the gateway). A step
// of the wall clock back by an hour then locked every key used in the last
// hour out for an hour (Retry-After 59m59s for a limit of 2 per second),
// and a step forward refilled every bucket at once, and let a sweep evict
// keys spent a moment ago.
func TestReview17WallClockStep(t *testing.T) {
	ctx := context.Background()
	newL := func(t *testing.T, s *limiter.MemoryStore, limits ...limiter.Limit) *limiter.Limiter {
		t.Helper()
		l, err := limiter.New(limits, &limiter.Options{Store: s})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	rate := limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 2, Window: time.Second}
	r := limiter.Request{Session: "s", Calls: 1}
	spend := func(t *testing.T, l *limiter.Limiter, now time.Time) {
		t.Helper()
		for i := range 2 {
			if d := l.AllowAt(ctx, now, r); !d.Allowed {
				t.Fatalf("call %d of 2: denied %+v", i, d)
			}
		}
		if d := l.AllowAt(ctx, now, r); d.Allowed || d.RetryAfter != 500*time.Millisecond {
			t.Fatalf("third call: allowed %v, retry %v; want denied, retry 500ms", d.Allowed, d.RetryAfter)
		}
	}

	t.Run("back_an_hour", func(t *testing.T) {
		l := newL(t, limiter.NewMemoryStore(), rate)
		t1 := time.Now()
		spend(t, l, t1)
		// One second later by the monotonic clock; the wall clock went
		// back an hour meanwhile. The bucket refilled for that second.
		t2 := stepWall(t, t1.Add(time.Second), -time.Hour)
		for i := range 2 {
			if d := l.AllowAt(ctx, t2, r); !d.Allowed {
				t.Errorf("call %d one second later, wall clock stepped back 1h: denied, retry %v; want allowed", i, d.RetryAfter)
			}
		}
		if d := l.AllowAt(ctx, t2, r); d.Allowed || d.RetryAfter != 500*time.Millisecond {
			t.Errorf("third call one second later: allowed %v, retry %v; want denied, retry 500ms", d.Allowed, d.RetryAfter)
		}
	})
	t.Run("forward_an_hour", func(t *testing.T) {
		l := newL(t, limiter.NewMemoryStore(), rate)
		t1 := time.Now()
		spend(t, l, t1)
		// 100ms later by the monotonic clock, the wall clock an hour ahead:
		// a fifth of a call has refilled, not the whole bucket.
		t2 := stepWall(t, t1.Add(100*time.Millisecond), time.Hour)
		if d := l.AllowAt(ctx, t2, r); d.Allowed || d.RetryAfter != 400*time.Millisecond {
			t.Errorf("100ms later, wall clock stepped forward 1h: allowed %v, retry %v; want denied, retry 400ms", d.Allowed, d.RetryAfter)
		}
	})
	t.Run("sweep_forward_an_hour", func(t *testing.T) {
		s := limiter.NewMemoryStore()
		l := newL(t, s, rate)
		t1 := time.Now()
		spend(t, l, t1)
		s.Sweep(stepWall(t, t1, time.Hour))
		if d := l.AllowAt(ctx, t1, r); d.Allowed {
			t.Errorf("after a Sweep at a time whose wall clock is an hour ahead: a spent key was evicted and the call allowed")
		}
		if n := s.Len(); n != 1 {
			t.Errorf("Len after the sweep = %d, want 1 (the spent key)", n)
		}
	})
	t.Run("refund_across_a_step", func(t *testing.T) {
		l := newL(t, limiter.NewMemoryStore(), limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 10, Window: time.Minute})
		t1 := time.Now()
		d := l.AllowAt(ctx, t1, limiter.Request{Session: "s", Cost: 10})
		if !d.Allowed {
			t.Fatalf("denied: %+v", d)
		}
		// Refunded at once, the wall clock an hour ahead meanwhile: all of
		// it comes back.
		t2 := stepWall(t, t1, time.Hour)
		if k := l.Kept(t2, d); k != 0 {
			t.Errorf("Kept right after the decision, wall clock stepped forward 1h = %v, want 0", k)
		}
		if err := l.Refund(ctx, t2, d); err != nil {
			t.Fatal(err)
		}
		if d := l.AllowAt(ctx, t1, limiter.Request{Session: "s", Cost: 10}); !d.Allowed {
			t.Errorf("after the refund: denied, retry %v; want the full budget back", d.RetryAfter)
		}
	})
	t.Run("times_without_a_monotonic_reading", func(t *testing.T) {
		// A test's clock, or t.Round(0): the wall time, as before.
		l := newL(t, limiter.NewMemoryStore(), rate)
		t1 := time.Now().Round(0)
		spend(t, l, t1)
		if d := l.AllowAt(ctx, t1.Add(-time.Hour), r); d.Allowed || d.RetryAfter != time.Hour+500*time.Millisecond {
			t.Errorf("an hour earlier, no monotonic reading: allowed %v, retry %v; want denied, retry 1h0.5s", d.Allowed, d.RetryAfter)
		}
	})
}

// TestReview17ReleaseTwiceFreesOneSlot: a second Release of the same
// Decision freed a slot that another call held on the memory store, so a
// `defer l.Release(d)` next to an early l.Release(d) let more calls run at
// once than a concurrency limit allows; on Redis it does nothing (its
// slots are leases). Now it does nothing on the memory store too, through
// the fast path and through the Store interface alike.
func TestReview17ReleaseTwiceFreesOneSlot(t *testing.T) {
	ctx := context.Background()
	limits := []limiter.Limit{
		{Kind: limiter.Concurrency, Scope: limiter.Session, Max: 1},
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 2},
		{Kind: limiter.Rate, Scope: limiter.User, Max: 1000, Window: time.Minute},
	}
	stores := map[string]func() limiter.Store{
		"memory":                 func() limiter.Store { return limiter.NewMemoryStore() },
		"memory_through_a_store": func() limiter.Store { return limiter.StoreFunc(limiter.NewMemoryStore().Apply) },
	}
	for name, newStore := range stores {
		t.Run(name, func(t *testing.T) {
			l, err := limiter.New(limits, &limiter.Options{Store: newStore()})
			if err != nil {
				t.Fatal(err)
			}
			call := func(sess string) limiter.Decision {
				return l.AllowAt(ctx, t0, limiter.Request{Session: sess, User: "u", Calls: 1})
			}
			a := call("a")
			if !a.Allowed {
				t.Fatalf("first call: %+v", a)
			}
			l.Release(a)
			b := call("a")
			if !b.Allowed {
				t.Fatalf("call after the release: %+v", b)
			}
			l.Release(a) // again: b's slot must stay taken
			if d := call("a"); d.Allowed {
				t.Errorf("session a: a call allowed while b holds its only slot (a was released twice)")
				l.Release(d)
			}
			c := call("c")
			if !c.Allowed {
				t.Fatalf("session c: %+v", c)
			}
			if d := call("d"); d.Allowed {
				t.Errorf("global: a third call in flight allowed with Max 2 (a was released twice)")
				l.Release(d)
			}
			l.Release(b)
			l.Release(b)
			l.Release(c)
			l.Release(c)
			// Everything is free again, exactly: 2 global slots.
			x, y, z := call("x"), call("y"), call("z")
			if !x.Allowed || !y.Allowed || z.Allowed {
				t.Errorf("after all releases: allowed %v %v %v, want true true false", x.Allowed, y.Allowed, z.Allowed)
			}
		})
	}
}

// TestReview17SweepKeepsHeldSlotsThroughDoubleRelease: idle keys are swept
// while a Decision holds a slot, and stale releases come in between; the
// held slot stays counted, and the released ones stay free.
func TestReview17SweepKeepsHeldSlotsThroughDoubleRelease(t *testing.T) {
	ctx := context.Background()
	s := limiter.NewMemoryStore()
	l, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 2},
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 1, Window: time.Second},
	}, &limiter.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	held := l.AllowAt(ctx, t0, limiter.Request{Session: "held", Calls: 1})
	if !held.Allowed {
		t.Fatalf("held: %+v", held)
	}
	// Thousands of sessions come and go (their keys are swept as the
	// store grows), each releasing its call twice.
	for i := range 5000 {
		d := l.AllowAt(ctx, t0.Add(time.Duration(i)*time.Millisecond), limiter.Request{Session: "s" + strconv.Itoa(i), Calls: 1})
		if !d.Allowed {
			t.Fatalf("call %d: %+v", i, d)
		}
		l.Release(d)
		l.Release(d)
	}
	s.Sweep(t0.Add(time.Hour))
	at := t0.Add(time.Hour)
	one := l.AllowAt(ctx, at, limiter.Request{Session: "one"})
	if d := l.AllowAt(ctx, at, limiter.Request{Session: "two"}); !one.Allowed || d.Allowed {
		t.Errorf("with one of 2 global slots held: allowed %v, %v; want true, false", one.Allowed, d.Allowed)
	}
	l.Release(one)
	l.Release(held)
	l.Release(held)
	s.Sweep(t0.Add(2 * time.Hour))
	if n := s.Len(); n != 0 {
		t.Errorf("Len after every call ended and a sweep = %d, want 0", n)
	}
	a, b, c := l.AllowAt(ctx, at, limiter.Request{}), l.AllowAt(ctx, at, limiter.Request{}), l.AllowAt(ctx, at, limiter.Request{})
	if !a.Allowed || !b.Allowed || c.Allowed {
		t.Errorf("after every slot was released: allowed %v %v %v, want true true false", a.Allowed, b.Allowed, c.Allowed)
	}
}

// TestReview17RoundingDriftBounded runs tens of thousands of calls, each at
// the earliest time the limiter allows it, against spend and rate limits
// whose time per call is not a whole number of nanoseconds, and checks what
// passed over the whole run against the documented bound (see Limit): at
// most Max + Max*d/Window units, plus less than one nanosecond's worth of
// units per call for the rounding down of each call's time; and never less
// than the exact budget allows, less one call.
func TestReview17RoundingDriftBounded(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		kind   limiter.Kind
		max    float64
		window time.Duration
		cost   float64
	}{
		{"spend_tenths", limiter.Spend, 10, time.Minute, 0.1},
		{"spend_thirds", limiter.Spend, 10, time.Minute, 1.0 / 3},
		{"spend_odd", limiter.Spend, 1000, time.Hour, 0.7},
		{"rate_7_per_second", limiter.Rate, 7, time.Second, 1},
		{"rate_3000_per_second", limiter.Rate, 3000, time.Second, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := limiter.New([]limiter.Limit{{Kind: tc.kind, Scope: limiter.Session, Max: tc.max, Window: tc.window}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := limiter.Request{Session: "drift", Calls: 1}
			if tc.kind == limiter.Spend {
				r = limiter.Request{Session: "drift", Cost: tc.cost}
			}
			now, last := t0, t0
			calls, units := 0, 0.0
			for range 50_000 {
				d := l.AllowAt(ctx, now, r)
				if !d.Allowed {
					if d.RetryAfter <= 0 || d.RetryAfter > tc.window {
						t.Fatalf("denied at t0+%v with retry %v, want in (0, %v]", now.Sub(t0), d.RetryAfter, tc.window)
					}
					now = now.Add(d.RetryAfter)
					continue
				}
				calls++
				units += tc.cost
				last = now
			}
			span := last.Sub(t0)
			exact := tc.max + tc.max*float64(span)/float64(tc.window)
			perTick := tc.max / float64(tc.window) // units per nanosecond
			if hi := exact + float64(calls)*perTick; units > hi*(1+1e-12) {
				t.Errorf("%d calls over %v passed %v units; the limit allows %v, and the rounding at most %v more",
					calls, span, units, exact, hi-exact)
			}
			if lo := exact - tc.cost; units < lo*(1-1e-12) {
				t.Errorf("%d calls over %v passed %v units, fewer than the %v the limit allows, less one call", calls, span, units, exact)
			}
			t.Logf("%d calls over %v: %v units, the limit %v (%+.2g)", calls, span, units, exact, (units-exact)/exact)
		})
	}
}

// TestReview17ConcurrentDoubleReleases: goroutines take slots, and release
// each one twice, while others hold theirs; at no moment do more calls run
// than the limits allow, and at the end every slot is free.
func TestReview17ConcurrentDoubleReleases(t *testing.T) {
	ctx := context.Background()
	const max = 3
	l, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: max},
		{Kind: limiter.Concurrency, Scope: limiter.User, Max: 2},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var running, most atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				d := l.AllowAt(ctx, t0, limiter.Request{User: "u" + strconv.Itoa(g%3)})
				if !d.Allowed {
					continue
				}
				n := running.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				runtime.Gosched() // let others run meanwhile
				running.Add(-1)
				l.Release(d)
				l.Release(d)
			}
		}()
	}
	wg.Wait()
	if m := most.Load(); m > max {
		t.Errorf("%d calls ran at once, want at most %d", m, max)
	}
	var held []limiter.Decision
	for i := range max + 1 {
		d := l.AllowAt(ctx, t0, limiter.Request{User: "v" + strconv.Itoa(i)})
		if d.Allowed {
			held = append(held, d)
		}
	}
	if len(held) != max {
		t.Errorf("after every call ended: %d slots free, want %d", len(held), max)
	}
}
