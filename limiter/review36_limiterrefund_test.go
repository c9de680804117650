package limiter_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview36RefundCostOnlyDecision pins the refund of an allowed call that
// took only cost (Calls 0, the retry of a call already counted) of exactly
// one unit: Refund gives the unit back, so a call needing it passes again.
// A refund that took "cost 1" for "nothing taken" would charge a call that
// never ran.
func TestReview36RefundCostOnlyDecision(t *testing.T) {
	ctx := context.Background()
	l, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 1, Window: time.Hour},
		{Kind: limiter.Spend, Scope: limiter.Session, Max: 1, Window: time.Hour},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := limiter.Request{Session: "s", Calls: 0, Cost: 1}
	d := l.AllowAt(ctx, t0, r)
	if !d.Allowed {
		t.Fatalf("AllowAt(%+v): denied: %v %v", r, d.Limit, d.Err)
	}
	if d2 := l.AllowAt(ctx, t0, r); d2.Allowed {
		t.Fatalf("AllowAt(%+v) again: allowed, want the spend limit to deny", r)
	}
	if err := l.Refund(ctx, t0, d); err != nil {
		t.Fatalf("Refund: %v", err)
	}
	if d3 := l.AllowAt(ctx, t0, r); !d3.Allowed {
		t.Errorf("AllowAt(%+v) after the refund: denied by %v, want the unit given back",
			r, d3.Limit)
	}
}

// ctxStore is a RefundStore that allows every reservation and, for a
// refund, records the batch's Elapsed and fails when its ctx is done, as a
// network store would. It keeps no buckets: its clock is its own.
type ctxStore struct {
	mu      sync.Mutex
	elapsed []time.Duration
}

func (s *ctxStore) Apply(ctx context.Context, now time.Time, b *limiter.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.Refund {
		s.mu.Lock()
		s.elapsed = append(s.elapsed, b.Elapsed)
		s.mu.Unlock()
		return nil
	}
	b.Denied = -1
	return nil
}

func (*ctxStore) Refunds() bool { return true }

// TestReview36RefundUsesCallersContext pins that Refund hands the store the
// caller's ctx: a refund whose ctx is done fails with ErrStoreUnavailable
// (and the ctx's error) as documented, rather than running on without the
// caller's deadline or cancellation.
func TestReview36RefundUsesCallersContext(t *testing.T) {
	s := &ctxStore{}
	l, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 10, Window: time.Minute},
	}, &limiter.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	d := l.AllowAt(context.Background(), t0, limiter.Request{Session: "s", Calls: 1})
	if !d.Allowed {
		t.Fatalf("AllowAt: denied: %v %v", d.Limit, d.Err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = l.Refund(ctx, t0, d)
	if !errors.Is(err, limiter.ErrStoreUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("Refund with a cancelled ctx = %v, want ErrStoreUnavailable and "+
			"context.Canceled", err)
	}
	if len(s.elapsed) != 0 {
		t.Errorf("the store carried out %d refunds with the cancelled ctx, want 0", len(s.elapsed))
	}
}

// TestReview36RefundZeroTimeReadsTheClock pins clockNano's documented
// fallback for a store with its own clock: a caller may pass the zero time
// as now to AllowAt, Refund and Kept, and the time between a decision and
// its refund is then the real time between the calls, not zero. Read as
// zero, a late refund would give back units other calls took since, and
// Kept would report a refunded call as costing nothing.
func TestReview36RefundZeroTimeReadsTheClock(t *testing.T) {
	ctx := context.Background()
	s := &ctxStore{}
	l, err := limiter.New([]limiter.Limit{
		// 1 unit a millisecond: a refund 2ms later keeps all of a cost 1.
		{Kind: limiter.Spend, Scope: limiter.Session, Max: 1000, Window: time.Second},
	}, &limiter.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	var zero time.Time
	d := l.AllowAt(ctx, zero, limiter.Request{Session: "s", Cost: 1})
	if !d.Allowed {
		t.Fatalf("AllowAt: denied: %v %v", d.Limit, d.Err)
	}
	const wait = 2 * time.Millisecond
	start := time.Now()
	for time.Since(start) < wait {
		time.Sleep(wait / 4) // time must pass; nothing to wait for
	}
	if got := l.Kept(zero, d); got != 1 {
		t.Errorf("Kept(zero time) %v after the decision = %v, want 1", time.Since(start), got)
	}
	if err := l.Refund(ctx, zero, d); err != nil {
		t.Fatalf("Refund: %v", err)
	}
	if len(s.elapsed) != 1 || s.elapsed[0] < wait {
		t.Errorf("refund Elapsed = %v, want one of at least %v", s.elapsed, wait)
	}
}

// TestReview36KeptSmallestShare pins Kept at the resolution it documents
// (thousandths): a refund one nanosecond after a decision whose increment is
// a microsecond keeps a thousandth of its cost, which Kept reports rather
// than rounding the first nanosecond to nothing kept.
func TestReview36KeptSmallestShare(t *testing.T) {
	l, err := limiter.New([]limiter.Limit{
		// 1000 units a millisecond: a cost of 1 is a 1µs increment.
		{Kind: limiter.Spend, Scope: limiter.Session, Max: 1000, Window: time.Millisecond},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := l.AllowAt(context.Background(), t0, limiter.Request{Session: "s", Cost: 1})
	if !d.Allowed {
		t.Fatalf("AllowAt: denied: %v %v", d.Limit, d.Err)
	}
	for _, tc := range []struct {
		after time.Duration
		want  float64
	}{
		{0, 0},
		{1, 0.001},
		{500, 0.5},
		{999, 0.999},
		{1000, 1},
	} {
		if got := l.Kept(t0.Add(tc.after), d); got != tc.want {
			t.Errorf("Kept %v after the decision = %v, want %v", tc.after, got, tc.want)
		}
	}
}

// TestReview36CheckValidShortWindow pins Check.Valid's bounds at their low
// end: the Check contract asks a Rate or Spend Window only to be positive,
// so a store must take a one-nanosecond window (a third-party Limiter or a
// direct caller may send one; only Limit refuses windows under MinWindow),
// and refuses a zero one.
func TestReview36CheckValidShortWindow(t *testing.T) {
	for _, k := range []limiter.Kind{limiter.Rate, limiter.Spend} {
		c := limiter.Check{ID: "x", Kind: k, Max: 1, N: 1, Window: time.Nanosecond}
		if err := c.Valid(); err != nil {
			t.Errorf("%+v.Valid() = %v, want nil", c, err)
		}
		b := &limiter.Batch{Checks: []limiter.Check{c}}
		if err := limiter.NewMemoryStore().Apply(context.Background(), t0, b); err != nil {
			t.Errorf("MemoryStore.Apply of %+v: %v, want nil", c, err)
		}
		c.Window = 0
		if err := c.Valid(); err == nil {
			t.Errorf("%+v.Valid() = nil, want an error", c)
		}
	}
}

// TestReview36ConcurrencyMaxBound pins New's upper bound on a Concurrency
// limit's Max (math.MaxInt32 slots, as Limit.Max documents): one slot more
// is refused with an error naming the bound, and the bound itself is taken.
// A store counting slots in 32 bits would wrap past it.
func TestReview36ConcurrencyMaxBound(t *testing.T) {
	over := limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.User, Max: math.MaxInt32 + 1}
	_, err := limiter.New([]limiter.Limit{over}, nil)
	if err == nil || !strings.Contains(err.Error(), "more than 2147483647 slots") {
		t.Errorf("New(%v) = %v, want an error naming the bound of 2147483647 slots", over, err)
	}
	at := over
	at.Max = math.MaxInt32
	if _, err := limiter.New([]limiter.Limit{at}, nil); err != nil {
		t.Errorf("New(%v) = %v, want nil", at, err)
	}
}
