package limiter_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// conc is a Concurrency check of Max max on key, as a Batch carries it.
func conc(id, key string, max float64) limiter.Check {
	return limiter.Check{ID: id, Key: key, Kind: limiter.Concurrency, Max: max, N: 1}
}

// apply applies b to s at t0 plus at and fails the test on an error.
func apply(t *testing.T, s limiter.Store, at time.Duration, b limiter.Batch) limiter.Batch {
	t.Helper()
	if err := s.Apply(context.Background(), t0.Add(at), &b); err != nil {
		t.Fatalf("Apply(%+v): %v", b, err)
	}
	return b
}

// reserve reserves checks under lease at t0 and reports the denying check, or -1.
func reserve(t *testing.T, s limiter.Store, lease uint64, checks ...limiter.Check) int {
	t.Helper()
	return apply(t, s, 0, limiter.Batch{Lease: lease, Checks: checks}).Denied
}

// TestReview35MemoryCountedSlots pins the memory store's slots taken without
// a lease (Lease zero, through Apply): they are counts, one or more
// Concurrency checks at once; a release without a lease frees one slot of
// every check, and a release of a slot that nobody holds (a key never seen,
// or one released already) frees nothing and never lets more than Max in.
func TestReview35MemoryCountedSlots(t *testing.T) {
	s := limiter.NewMemoryStore()
	a, b := conc("conc-a", "k", 1), conc("conc-b", "k", 1)
	release := func(checks ...limiter.Check) {
		apply(t, s, 0, limiter.Batch{Release: true, Checks: checks})
	}
	// A release of slots nobody took: nothing to free, no credit made.
	release(a, b)
	if got := reserve(t, s, 0, a, b); got != -1 {
		t.Fatalf("first reservation without a lease denied by check %d", got)
	}
	if got := reserve(t, s, 0, a, b); got < 0 {
		t.Fatalf("second reservation of one slot allowed")
	}
	release(a, b)
	if got := reserve(t, s, 0, a, b); got != -1 {
		t.Fatalf("reservation after the release without a lease denied by check %d: the slot was not freed", got)
	}
	// Released twice: the second frees nothing, and the count stays at
	// zero, not below.
	release(a, b)
	release(a, b)
	if got := reserve(t, s, 0, a, b); got != -1 {
		t.Fatalf("reservation after the releases denied by check %d", got)
	}
	if got := reserve(t, s, 0, a, b); got < 0 {
		t.Errorf("two reservations of one slot allowed after a release too many")
	}
}

// TestReview35MemoryLeaseSentAgain pins the memory store's reservation sent
// again under the same Lease, whatever shard the Lease's low byte names (0
// included): it is allowed (Denied -1), as the first time, and takes no
// second slot.
func TestReview35MemoryLeaseSentAgain(t *testing.T) {
	for _, lease := range []uint64{0x100, 0x1ff, 0x2a07} {
		s := limiter.NewMemoryStore()
		c := conc("conc", "k", 2)
		for i := range 2 {
			if got := reserve(t, s, lease, c); got != -1 {
				t.Fatalf("lease %#x, sending %d: Denied = %d, want -1", lease, i+1, got)
			}
		}
		if got := reserve(t, s, lease+1, c); got != -1 {
			t.Errorf("lease %#x: a second call denied (Denied %d): the reservation sent again took a slot", lease, got)
		}
		if got := reserve(t, s, lease+2, c); got != 0 {
			t.Errorf("lease %#x: a third call with two slots: Denied = %d, want 0", lease, got)
		}
	}
}

// TestReview35MemoryDeniedLeaseHoldsNothing: a reservation denied by the
// memory store leases nothing, so that its release (an Abandon, or a plain
// Release) frees no slot of the call holding it, and the same Lease sent
// again once there is room is decided anew, not taken as done.
func TestReview35MemoryDeniedLeaseHoldsNothing(t *testing.T) {
	for _, abandon := range []bool{false, true} {
		s := limiter.NewMemoryStore()
		c := conc("conc", "k", 1)
		if got := reserve(t, s, 1, c); got != -1 {
			t.Fatalf("first call denied by check %d", got)
		}
		if got := reserve(t, s, 2, c); got != 0 {
			t.Fatalf("second call: Denied = %d, want 0", got)
		}
		apply(t, s, 0, limiter.Batch{Release: true, Abandon: abandon, Lease: 2, Checks: []limiter.Check{c}})
		if got := reserve(t, s, 3, c); got != 0 {
			t.Errorf("abandon %v: the release of a denied lease freed the slot of the first call (Denied = %d, want 0)", abandon, got)
		}
		apply(t, s, 0, limiter.Batch{Release: true, Lease: 1, Checks: []limiter.Check{c}})
		if got := reserve(t, s, 2, c); got != -1 {
			t.Fatalf("abandon %v: the denied lease sent again with a slot free: Denied = %d, want -1", abandon, got)
		}
		if got := reserve(t, s, 4, c); got != 0 {
			t.Errorf("abandon %v: the denied lease sent again took no slot: another call allowed", abandon)
		}
	}
}

// TestReview35MemoryAbandon pins Abandon batches on the memory store: an
// Abandon of a Lease frees the slots it holds, once, as a release does; an
// Abandon without a Lease frees nothing, since a failed reservation of
// counted slots cannot be told from one that was carried out.
func TestReview35MemoryAbandon(t *testing.T) {
	s := limiter.NewMemoryStore()
	c := conc("conc", "k", 1)
	if got := reserve(t, s, 7, c); got != -1 {
		t.Fatalf("first call denied by check %d", got)
	}
	abandon := func(lease uint64) {
		apply(t, s, 0, limiter.Batch{Release: true, Abandon: true, Lease: lease, Checks: []limiter.Check{c}})
	}
	abandon(7)
	if got := reserve(t, s, 0, c); got != -1 {
		t.Fatalf("call after the Abandon of the lease holding the slot: Denied = %d, want -1", got)
	}
	abandon(7) // again: frees nothing
	abandon(0) // no lease: frees nothing, not the counted slot just taken
	if got := reserve(t, s, 0, c); got != 0 {
		t.Errorf("a second Abandon, or an Abandon without a lease, freed a slot: Denied = %d, want 0", got)
	}
}

// TestReview35NeverFitsOutranksWaits: when a call costs more than a Spend
// limit's Max, it is that limit that denies it with no RetryAfter (no wait
// helps), whichever other limit would make it wait and in whichever order
// the limits come.
func TestReview35NeverFitsOutranksWaits(t *testing.T) {
	spend := limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour}
	rate := limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 1, Window: time.Minute}
	for _, tt := range []struct {
		name   string
		limits []limiter.Limit
		spent  bool // the rate limit's one call is taken first
	}{
		{"spend first, rate full", []limiter.Limit{spend, rate}, false},
		{"spend first, rate spent", []limiter.Limit{spend, rate}, true},
		{"rate first, rate spent", []limiter.Limit{rate, spend}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := limiter.New(tt.limits, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if tt.spent {
				if d := l.AllowAt(ctx, t0, limiter.Request{Session: "s", User: "u", Calls: 1}); !d.Allowed {
					t.Fatalf("first call denied by %v", d.Limit)
				}
			}
			d := l.AllowAt(ctx, t0, limiter.Request{Session: "s", User: "u", Calls: 1, Cost: 20})
			if d.Allowed || d.Limit != spend || d.RetryAfter != 0 {
				t.Errorf("call costing 20 > Max 10 = allowed %v by %v, RetryAfter %v; want denied by %v, RetryAfter 0",
					d.Allowed, d.Limit, d.RetryAfter, spend)
			}
		})
	}
}

// TestReview35MemoryRefundExact: a Refund batch gives back the increment a
// reservation of N added less Elapsed, to the nanosecond: with a second of
// increment and Elapsed a nanosecond short of it, the one nanosecond given
// back makes the bucket full at the refund's instant; with Elapsed the
// whole second or more, nothing is given back, and a call then waits that
// nanosecond.
func TestReview35MemoryRefundExact(t *testing.T) {
	rate := limiter.Check{ID: "rate", Key: "k", Kind: limiter.Rate, Max: 1, Window: time.Second, N: 1}
	for _, tt := range []struct {
		elapsed time.Duration
		retry   time.Duration // of a call at the refund's instant; 0: allowed
	}{
		{time.Second - time.Nanosecond, 0},
		{time.Second, time.Nanosecond},
		{2 * time.Second, time.Nanosecond},
	} {
		s := limiter.NewMemoryStore()
		at := 5 * time.Second
		// The bucket's TAT is at+1s after this, a nanosecond after the
		// refund's instant.
		if b := apply(t, s, at, limiter.Batch{Checks: []limiter.Check{rate}}); b.Denied != -1 {
			t.Fatalf("reservation denied by check %d", b.Denied)
		}
		now := at + time.Second - time.Nanosecond
		apply(t, s, now, limiter.Batch{Refund: true, Elapsed: tt.elapsed, Checks: []limiter.Check{rate}})
		b := apply(t, s, now, limiter.Batch{Checks: []limiter.Check{rate}})
		if got := b.Denied == -1; got != (tt.retry == 0) || !got && b.RetryAfter != tt.retry {
			t.Errorf("Elapsed %v: call at the refund = Denied %d, RetryAfter %v; want allowed %v, RetryAfter %v",
				tt.elapsed, b.Denied, b.RetryAfter, tt.retry == 0, tt.retry)
		}
	}
}

// TestReview35SweepEvictsBucketFullAtNow: Sweep(now) evicts a key whose
// bucket has refilled at exactly now (its TAT is now: a call of Max units
// would be allowed), as it does one refilled before.
func TestReview35SweepEvictsBucketFullAtNow(t *testing.T) {
	s := limiter.NewMemoryStore()
	rate := limiter.Check{ID: "rate", Key: "k", Kind: limiter.Rate, Max: 2, Window: time.Second, N: 2}
	apply(t, s, 0, limiter.Batch{Checks: []limiter.Check{rate}})
	s.Sweep(t0.Add(time.Second - time.Nanosecond))
	if got := s.Len(); got != 1 {
		t.Fatalf("Len after Sweep a nanosecond before the bucket is full = %d, want 1", got)
	}
	s.Sweep(t0.Add(time.Second))
	if got := s.Len(); got != 0 {
		t.Errorf("Len after Sweep at the instant the bucket is full = %d, want 0", got)
	}
}

// TestReview35SweepShrinksBusyShards: Sweep gives back the memory of idle
// keys even where a few keys stay busy (holding a slot) in every shard of
// the map, not only where every key went: Go maps never shrink, so a
// shard left with few entries is copied into a map of their size.
func TestReview35SweepShrinksBusyShards(t *testing.T) {
	idle, busy := 100_000, 4096
	if raceEnabled {
		idle = 30_000
	}
	s := limiter.NewMemoryStore()
	l, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 10, Window: time.Minute},
		{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1},
	}, &limiter.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	call := func(key string) limiter.Decision {
		d := l.AllowAt(ctx, t0, limiter.Request{Session: key, User: key, Calls: 1})
		if !d.Allowed {
			t.Fatalf("call of %s denied by %v", key, d.Limit)
		}
		return d
	}
	base := heapAlloc()
	held := make([]limiter.Decision, 0, busy)
	for i := range busy {
		held = append(held, call("busy-"+strconv.Itoa(i)))
	}
	for i := range idle {
		l.Release(call("idle-" + strconv.Itoa(i)))
	}
	h1 := heapAlloc()
	s.Sweep(t0.Add(10 * time.Minute))
	h2, n := heapAlloc(), s.Len()
	if n != busy {
		t.Fatalf("Len after Sweep = %d, want %d (the busy keys' slots)", n, busy)
	}
	mb := func(h uint64) float64 { return float64(int64(h)-int64(base)) / (1 << 20) }
	if mb(h2) > 0.2*mb(h1) {
		t.Errorf("heap above baseline: %.1f MiB with %d entries, %.1f MiB after Sweep left %d; want at most 20%%",
			mb(h1), 2*idle+2*busy, mb(h2), n)
	}
	for _, d := range held {
		l.Release(d)
	}
}

// leasing is a store other than the MemoryStore whose slots are leases: a
// MemoryStore behind it, and Apply failing while down is set (without
// carrying the batch out) or fail is (after carrying it out, like a reply
// lost on the way back).
type leasing struct {
	*limiter.MemoryStore
	down, fail atomic.Bool
}

func (s *leasing) Apply(ctx context.Context, now time.Time, b *limiter.Batch) error {
	if s.down.Load() {
		return errors.New("connection refused")
	}
	err := s.MemoryStore.Apply(ctx, now, b)
	if err == nil && s.fail.Load() {
		err = errors.New("reply lost")
	}
	return err
}

// TestReview35LeaseStoreSlotsNotLeaked pins the Limiter on a LeaseStore other
// than the MemoryStore, with the concurrency limit first among its limits: a
// second Release of a Decision frees no other call's slot, and the slot of a
// reservation whose Apply failed after the store carried it out, or of a
// Release whose Apply failed, comes back (by the abandon sent in the
// background) rather than staying taken.
func TestReview35LeaseStoreSlotsNotLeaked(t *testing.T) {
	s := &leasing{MemoryStore: limiter.NewMemoryStore()}
	l, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 1},
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 100, Window: time.Second},
	}, &limiter.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	call := func() limiter.Decision {
		return l.AllowAt(ctx, time.Now(), limiter.Request{Session: "s", Calls: 1})
	}
	a := call()
	if !a.Allowed {
		t.Fatalf("first call denied: %v %v", a.Limit, a.Err)
	}
	l.Release(a)
	b := call()
	if !b.Allowed {
		t.Fatalf("call after the release denied: %v %v", b.Limit, b.Err)
	}
	l.Release(a) // again: frees nothing, not b's slot
	if d := call(); d.Allowed {
		t.Fatalf("a second Release of a Decision freed the slot another call holds")
	}
	l.Release(b)

	s.fail.Store(true)
	if d := call(); d.Allowed || !errors.Is(d.Err, limiter.ErrStoreUnavailable) {
		t.Fatalf("call whose Apply failed = allowed %v, Err %v; want denied, ErrStoreUnavailable", d.Allowed, d.Err)
	}
	s.fail.Store(false)
	waitFree := func(what string) limiter.Decision {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if d := call(); d.Allowed {
				return d
			}
			if time.Now().After(deadline) {
				t.Fatalf("the slot of %s is still taken after 5s", what)
			}
		}
	}
	d := waitFree("the reservation whose Apply failed")
	s.down.Store(true)
	l.Release(d)
	s.down.Store(false)
	l.Release(waitFree("the Decision whose Release failed"))
}

// TestReview35DeniedOutsideContract: a store reporting a Denied index that
// names no check (below -1, or at or past the number of checks) makes the
// call fail, denied, with an Err unwrapping to ErrStoreUnavailable.
func TestReview35DeniedOutsideContract(t *testing.T) {
	for _, off := range []int{-3, 0, 1, 5} { // Denied = len(Checks)+off
		store := limiter.StoreFunc(func(_ context.Context, _ time.Time, b *limiter.Batch) error {
			b.Denied = len(b.Checks) + off
			return nil
		})
		l, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.Session, Max: 1, Window: time.Second}},
			&limiter.Options{Store: store, FailOpenReads: true, FailOpenWrites: true})
		if err != nil {
			t.Fatal(err)
		}
		d := l.AllowAt(context.Background(), t0, limiter.Request{Session: "s", Calls: 1})
		if d.Allowed || !errors.Is(d.Err, limiter.ErrStoreUnavailable) {
			t.Errorf("Denied = len(Checks)%+d: allowed %v, Err %v; want denied, ErrStoreUnavailable", off, d.Allowed, d.Err)
		}
	}
}

// TestReview35GaveUpErrUnwrapsToCause: when the caller's context ends while
// the store decides and the store then fails with an error of its own, the
// call is denied whatever the fail-open options, and its Err unwraps both to
// ErrStoreUnavailable and to the context's error.
func TestReview35GaveUpErrUnwrapsToCause(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	down := limiter.StoreFunc(func(context.Context, time.Time, *limiter.Batch) error {
		cancel() // the caller goes while the store decides
		return errors.New("i/o timeout")
	})
	l, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.Session, Max: 1, Window: time.Second}},
		&limiter.Options{Store: down, FailOpenReads: true, FailOpenWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	d := l.AllowAt(ctx, t0, limiter.Request{Session: "s", Calls: 1})
	if d.Allowed || !errors.Is(d.Err, limiter.ErrStoreUnavailable) || !errors.Is(d.Err, context.Canceled) {
		t.Errorf("AllowAt = allowed %v, Err %v; want denied, Err unwrapping to ErrStoreUnavailable and context.Canceled",
			d.Allowed, d.Err)
	}
}
