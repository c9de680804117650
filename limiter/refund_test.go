package limiter_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/limiter"
)

// recorder is a store in front of a MemoryStore that records the batches it
// is sent, as they arrive. It refunds when refunds is set; fail makes it
// fail the batches for which it returns true, without applying them.
type recorder struct {
	mem     *limiter.MemoryStore
	refunds bool
	fail    func(b *limiter.Batch) bool

	mu      sync.Mutex
	batches []limiter.Batch
}

func newRecorder(refunds bool) *recorder {
	return &recorder{mem: limiter.NewMemoryStore(), refunds: refunds}
}

func (r *recorder) Apply(ctx context.Context, now time.Time, b *limiter.Batch) error {
	r.mu.Lock()
	c := *b
	c.Checks = append([]limiter.Check(nil), b.Checks...)
	r.batches = append(r.batches, c)
	r.mu.Unlock()
	if r.fail != nil && r.fail(b) {
		return errors.New("connection refused")
	}
	return r.mem.Apply(ctx, now, b)
}

func (r *recorder) Refunds() bool { return r.refunds }

// refundBatches returns the refund batches recorded.
func (r *recorder) refundBatches() []limiter.Batch {
	r.mu.Lock()
	defer r.mu.Unlock()
	var bs []limiter.Batch
	for _, b := range r.batches {
		if b.Refund {
			bs = append(bs, b)
		}
	}
	return bs
}

func newRefundLimiter(t *testing.T, s limiter.Store, opts *limiter.Options, limits ...limiter.Limit) *limiter.Limiter {
	t.Helper()
	if opts == nil {
		opts = &limiter.Options{}
	}
	opts.Store = s
	l, err := limiter.New(limits, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestRefundBatch checks the batch a refund sends a store: the Rate and
// Spend checks of the decision's tool, under its keys, with its calls and
// cost; no Concurrency check; a Lease of its own (not the reservation's,
// another for each refund), which a store whose client may resend uses to
// refund once. The slot is still released once.
func TestRefundBatch(t *testing.T) {
	rec := newRecorder(true)
	limits := []limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 10, Window: time.Minute},
		{Kind: limiter.Spend, Scope: limiter.User, Tool: "pay", Max: 100, Window: time.Hour},
		{Kind: limiter.Rate, Scope: limiter.Global, Tool: "other", Max: 5, Window: time.Minute},
		{Kind: limiter.Concurrency, Scope: limiter.User, Max: 3},
	}
	l := newRefundLimiter(t, rec, nil, limits...)
	ctx := context.Background()
	d := l.AllowAt(ctx, t0, limiter.Request{Session: "s", User: "u", Tool: "pay", Calls: 1, Cost: 2.5})
	if !d.Allowed {
		t.Fatalf("AllowAt: denied: %v %v", d.Limit, d.Err)
	}
	if err := l.Refund(ctx, t0, d); err != nil {
		t.Fatalf("Refund: %v", err)
	}
	want := []limiter.Batch{{
		Refund: true,
		Checks: []limiter.Check{
			{ID: limits[0].ID(), Key: "s", Kind: limiter.Rate, Max: 10, Window: time.Minute, N: 1},
			{ID: limits[1].ID(), Key: "u", Kind: limiter.Spend, Max: 100, Window: time.Hour, N: 2.5},
		},
	}}
	got := rec.refundBatches()
	if err := l.Refund(ctx, t0, d); err != nil { // a second refund: another lease
		t.Fatalf("Refund: %v", err)
	}
	leases := map[uint64]bool{0: true}
	for _, b := range rec.batches {
		if !b.Refund && !b.Release {
			leases[b.Lease] = true // the reservation's
		}
	}
	for _, b := range rec.refundBatches() {
		if leases[b.Lease] {
			t.Errorf("refund lease %d: zero, the reservation's or another refund's", b.Lease)
		}
		leases[b.Lease] = true
	}
	for i := range got {
		got[i].Lease = 0
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("refund batches mismatch (-want +got):\n%s", diff)
	}
	// The slot is still held: Release frees it.
	l.Release(d)
	var released int
	for _, b := range rec.batches {
		if b.Release {
			released++
		}
	}
	if released != 1 {
		t.Errorf("%d release batches after Release, want 1", released)
	}
}

// TestRefundGivesNothing checks the decisions that took nothing: Refund
// returns nil and sends the store nothing.
func TestRefundGivesNothing(t *testing.T) {
	limits := []limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 1, Window: time.Minute},
		{Kind: limiter.Spend, Scope: limiter.Session, Tool: "pay", Max: 10, Window: time.Minute},
	}
	ctx := context.Background()
	tests := []struct {
		name     string
		decision func(l *limiter.Limiter) limiter.Decision
	}{
		{"zero_decision", func(*limiter.Limiter) limiter.Decision { return limiter.Decision{} }},
		{"denied", func(l *limiter.Limiter) limiter.Decision {
			l.AllowAt(ctx, t0, limiter.Request{Session: "s", Calls: 1})
			return l.AllowAt(ctx, t0, limiter.Request{Session: "s", Calls: 1})
		}},
		{"invalid_cost", func(l *limiter.Limiter) limiter.Decision {
			return l.AllowAt(ctx, t0, limiter.Request{Session: "s", Calls: 1, Cost: -1})
		}},
		{"no_calls_no_cost", func(l *limiter.Limiter) limiter.Decision {
			return l.AllowAt(ctx, t0, limiter.Request{Session: "s", Tool: "pay"})
		}},
		{"cost_without_spend_limit", func(l *limiter.Limiter) limiter.Decision {
			return l.AllowAt(ctx, t0, limiter.Request{Session: "s", Tool: "read", Cost: 5})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, supported := range []bool{true, false} {
				rec := newRecorder(supported)
				l := newRefundLimiter(t, rec, nil, limits...)
				d := tt.decision(l)
				if err := l.Refund(ctx, t0, d); err != nil {
					t.Errorf("Refund (store refunds: %v): %v, want nil", supported, err)
				}
				if got := rec.refundBatches(); len(got) != 0 {
					t.Errorf("Refund (store refunds: %v) sent %+v, want nothing", supported, got)
				}
			}
		})
	}
	t.Run("fail_open", func(t *testing.T) {
		rec := newRecorder(true)
		rec.fail = func(b *limiter.Batch) bool { return !b.Refund }
		l := newRefundLimiter(t, rec, &limiter.Options{FailOpenReads: true}, limits...)
		d := l.AllowAt(ctx, t0, limiter.Request{Session: "s", Tool: "pay", Calls: 1, Cost: 1})
		if !d.Allowed || !errors.Is(d.Err, limiter.ErrStoreUnavailable) {
			t.Fatalf("AllowAt with the store down: allowed %v, err %v; want allowed with ErrStoreUnavailable", d.Allowed, d.Err)
		}
		if err := l.Refund(ctx, t0, d); err != nil {
			t.Errorf("Refund: %v, want nil", err)
		}
		if got := rec.refundBatches(); len(got) != 0 {
			t.Errorf("Refund sent %+v, want nothing", got)
		}
	})
}

// TestRefundUnsupported checks a store that does not refund: Refund
// returns ErrRefundUnsupported and changes nothing.
func TestRefundUnsupported(t *testing.T) {
	lim := limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 1, Window: time.Minute}
	ctx := context.Background()
	r := limiter.Request{Session: "s", Calls: 1}
	for _, tc := range []struct {
		name  string
		store limiter.Store
	}{
		{"store_func", limiter.StoreFunc(limiter.NewMemoryStore().Apply)},
		{"refunds_false", newRecorder(false)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newRefundLimiter(t, tc.store, nil, lim)
			d := l.AllowAt(ctx, t0, r)
			err := l.Refund(ctx, t0, d)
			if !errors.Is(err, limiter.ErrRefundUnsupported) {
				t.Errorf("Refund: %v, want an error that unwraps to ErrRefundUnsupported", err)
			}
			t.Logf("error reported: %v", err)
			if d := l.AllowAt(ctx, t0, r); d.Allowed {
				t.Error("after an unsupported refund, the next call is allowed: the refund changed the state")
			}
			if rec, ok := tc.store.(*recorder); ok && len(rec.refundBatches()) != 0 {
				t.Errorf("refund batches sent to a store that does not refund: %+v", rec.refundBatches())
			}
		})
	}
}

// TestRefundStoreFailure checks that a store failing a refund is reported
// as ErrStoreUnavailable, with its cause.
func TestRefundStoreFailure(t *testing.T) {
	rec := newRecorder(true)
	rec.fail = func(b *limiter.Batch) bool { return b.Refund }
	l := newRefundLimiter(t, rec, nil, limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 1, Window: time.Minute})
	ctx := context.Background()
	d := l.AllowAt(ctx, t0, limiter.Request{Session: "s", Calls: 1})
	err := l.Refund(ctx, t0, d)
	if !errors.Is(err, limiter.ErrStoreUnavailable) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Refund: %v, want ErrStoreUnavailable with the cause", err)
	}
	if d := l.AllowAt(ctx, t0, limiter.Request{Session: "s", Calls: 1}); d.Allowed {
		t.Error("after a failed refund, the next call is allowed")
	}
}

// TestRefundTwice documents what a second refund of one Decision does on
// the memory store, on both paths: it gives back the units again, which
// other calls took, but never past a full bucket.
func TestRefundTwice(t *testing.T) {
	lim := limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 3, Window: time.Minute}
	ctx := context.Background()
	r := limiter.Request{Session: "s", Calls: 1}
	for _, tc := range []struct {
		name  string
		store limiter.Store
	}{{"memory", nil}, {"interface", memoryBehind{limiter.NewMemoryStore()}}} {
		t.Run(tc.name, func(t *testing.T) {
			l := newRefundLimiter(t, tc.store, nil, lim)
			var d limiter.Decision
			for range 3 {
				d = l.AllowAt(ctx, t0, r)
			}
			for range 2 {
				if err := l.Refund(ctx, t0, d); err != nil {
					t.Fatal(err)
				}
			}
			if got := countAllowed(l, r); got != 2 {
				t.Errorf("after refunding one of 3 calls twice: %d calls allowed, want 2 (the second refund gives back another call's unit)", got)
			}
			for range 10 {
				if err := l.Refund(ctx, t0, d); err != nil {
					t.Fatal(err)
				}
			}
			if got := countAllowed(l, r); got != 3 {
				t.Errorf("after refunding ten times: %d calls allowed, want 3 (never past a full bucket)", got)
			}
		})
	}
}

// countAllowed counts the calls r allowed at t0 until the first denial.
func countAllowed(l *limiter.Limiter, r limiter.Request) int {
	n := 0
	for n < 100 && l.AllowAt(context.Background(), t0, r).Allowed {
		n++
	}
	return n
}

// TestRefundManyLimits refunds a call under more limits than the memory
// path handles without allocating, on both paths.
func TestRefundManyLimits(t *testing.T) {
	var limits []limiter.Limit
	for i := 1; i <= 12; i++ {
		// Rate limits of i+2 calls per i seconds: the tightest burst is 3.
		limits = append(limits, limiter.Limit{Kind: limiter.Rate, Scope: limiter.Scope(1 + i%3), Max: float64(i + 2), Window: time.Duration(i) * time.Second})
	}
	ctx := context.Background()
	r := limiter.Request{Session: "s", User: "u", Calls: 1}
	for _, tc := range []struct {
		name  string
		store limiter.Store
	}{{"memory", nil}, {"interface", memoryBehind{limiter.NewMemoryStore()}}} {
		t.Run(tc.name, func(t *testing.T) {
			l := newRefundLimiter(t, tc.store, nil, limits...)
			var d limiter.Decision
			for range 3 {
				d = l.AllowAt(ctx, t0, r)
			}
			if err := l.Refund(ctx, t0, d); err != nil {
				t.Fatal(err)
			}
			if got := countAllowed(l, r); got != 1 {
				t.Errorf("after refunding one of 3 calls: %d calls allowed, want 1", got)
			}
		})
	}
}

// TestMemoryStoreRejectsReleaseAndRefund checks that a batch both releasing
// and refunding is refused and changes nothing.
func TestMemoryStoreRejectsReleaseAndRefund(t *testing.T) {
	s := limiter.NewMemoryStore()
	ctx := context.Background()
	c := limiter.Check{ID: "rate", Key: "k", Kind: limiter.Rate, Max: 1, Window: time.Minute, N: 1}
	if err := s.Apply(ctx, t0, &limiter.Batch{Checks: []limiter.Check{c}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, t0, &limiter.Batch{Release: true, Refund: true, Checks: []limiter.Check{c}}); err == nil {
		t.Error("Apply of a batch with Release and Refund: nil error, want one")
	}
	b := &limiter.Batch{Checks: []limiter.Check{c}}
	if err := s.Apply(ctx, t0, b); err != nil || b.Denied != 0 {
		t.Errorf("next reservation: err %v, denied %d; want denied 0 (nothing given back)", err, b.Denied)
	}
}

// TestKept checks the share of a call's cost that a refund leaves taken:
// none right after the decision, the time since the decision over the
// increment after that, all of it from a full increment on; the Spend
// limit keeping the most counts; Rate limits, denied decisions and calls
// without cost keep nothing.
func TestKept(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	l, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 1, Window: time.Hour},
		{Kind: limiter.Spend, Scope: limiter.Session, Max: 10, Window: 10 * time.Minute}, // 1 unit a minute
		{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: 20 * time.Minute},    // 1 unit in 2 minutes
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d := l.AllowAt(ctx, t0, limiter.Request{Session: "s", User: "u", Calls: 1, Cost: 2})
	if !d.Allowed {
		t.Fatalf("denied: %+v", d)
	}
	// The user limit's increment is 4 minutes, the session limit's 2.
	for _, tc := range []struct {
		after time.Duration
		want  float64
	}{
		{0, 0},
		{time.Millisecond, 0},
		{time.Minute, 0.5},
		{2 * time.Minute, 1},
		{time.Hour, 1},
		{-time.Minute, 0},
	} {
		if got := l.Kept(t0.Add(tc.after), d); got != tc.want {
			t.Errorf("Kept %v after the decision = %v, want %v", tc.after, got, tc.want)
		}
	}
	free := l.AllowAt(ctx, t0, limiter.Request{Session: "s2", User: "u2", Calls: 1})
	if got := l.Kept(t0.Add(time.Hour), free); got != 0 {
		t.Errorf("Kept of a call without cost = %v, want 0", got)
	}
	denied := l.AllowAt(ctx, t0, limiter.Request{Session: "s", User: "u", Calls: 1, Cost: 2})
	if denied.Allowed {
		t.Fatal("second call allowed under 1 call an hour")
	}
	if got := l.Kept(t0.Add(time.Hour), denied); got != 0 {
		t.Errorf("Kept of a denied decision = %v, want 0", got)
	}
}
