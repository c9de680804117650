package limiter_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/limiter"
)

// peeker is a store function that says it carries out Peek checks and
// refunds (a MemoryStore's Apply, behind it, does both).
type peeker struct{ limiter.StoreFunc }

func (peeker) Peeks() bool   { return true }
func (peeker) Refunds() bool { return true }

// dsStores are the ways a Limiter reaches a store that peeks: the memory
// store's own path, and the generic path of any other store (the memory
// store behind a StoreFunc).
func dsStores() map[string]func() limiter.Store {
	return map[string]func() limiter.Store{
		"memory": func() limiter.Store { return limiter.NewMemoryStore() },
		"generic": func() limiter.Store {
			m := limiter.NewMemoryStore()
			return peeker{m.Apply}
		},
	}
}

type dsOutcome struct {
	Allowed    bool
	Kind       limiter.Kind
	Scope      limiter.Scope
	RetryAfter time.Duration
}

func dsOutcomeOf(d limiter.Decision) dsOutcome {
	return dsOutcome{d.Allowed, d.Limit.Kind, d.Limit.Scope, d.RetryAfter}
}

func dsNew(t *testing.T, s limiter.Store, limits ...limiter.Limit) *limiter.Limiter {
	t.Helper()
	l, err := limiter.New(limits, &limiter.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// dsAllow calls l.AllowAt at t0+at, checks the outcome and releases.
func dsAllow(t *testing.T, l *limiter.Limiter, at time.Duration, r limiter.Request, want dsOutcome) limiter.Decision {
	t.Helper()
	d := l.AllowAt(context.Background(), t0.Add(at), r)
	if d.Err != nil {
		t.Errorf("AllowAt(%+v): %v", r, d.Err)
	}
	if diff := cmp.Diff(want, dsOutcomeOf(d)); diff != "" {
		t.Errorf("AllowAt(t0+%v, %+v) (-want +got):\n%s", at, r, diff)
	}
	l.Release(d)
	return d
}

var dsAllowed = dsOutcome{Allowed: true}

// TestDryRunChecksSpendTakesNothing checks that a dry run is denied, with
// the very limit and wait a real call at the same instant gets, when its
// cost does not fit; that it takes no cost when it fits (a real call of
// what is left fits exactly after any number of them); and that it still
// takes its call from the rate, but none when it is denied.
func TestDryRunChecksSpendTakesNothing(t *testing.T) {
	spend := limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour}
	rate := limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 5, Window: time.Hour}
	for name, mk := range dsStores() {
		t.Run(name, func(t *testing.T) {
			l := dsNew(t, mk(), spend, rate)
			twin := dsNew(t, limiter.NewMemoryStore(), spend) // no rate: for the real call's answer
			real := limiter.Request{Session: "s", User: "u", Calls: 1, Cost: 7}
			dsAllow(t, l, 0, real, dsAllowed)
			dsAllow(t, twin, 0, real, dsAllowed)
			// 5 does not fit in the 3 left.
			over := limiter.Request{Session: "s", User: "u", Calls: 1, Cost: 5, DryRun: true}
			want := dsOutcomeOf(twin.AllowAt(context.Background(), t0, limiter.Request{Session: "s", User: "u", Calls: 1, Cost: 5}))
			if want.Allowed || want.Kind != limiter.Spend || want.RetryAfter != 12*time.Minute {
				t.Fatalf("the twin's real call: %+v", want)
			}
			dsAllow(t, l, 0, over, want)
			dsAllow(t, l, 0, over, want) // denied twice: it took nothing
			// 3 fits, any number of times; the rate takes one call each.
			fits := limiter.Request{Session: "s", User: "u", Calls: 1, Cost: 3, DryRun: true}
			d := dsAllow(t, l, 0, fits, dsAllowed)
			dsAllow(t, l, 0, fits, dsAllowed)
			if k := l.Kept(t0.Add(time.Second), d); k != 0 {
				t.Errorf("Kept of a dry run = %v, want 0: it took no cost", k)
			}
			// The real call of the 3 left fits exactly; then nothing.
			dsAllow(t, l, 0, limiter.Request{Session: "s", User: "u", Calls: 1, Cost: 3}, dsAllowed)
			dsAllow(t, l, 0, limiter.Request{Session: "s2", User: "u", Calls: 1, Cost: 0.001, DryRun: true},
				dsOutcome{Kind: limiter.Spend, Scope: limiter.User, RetryAfter: 360 * time.Millisecond})
			// Four calls counted on session s (the denied dry runs took
			// none): one more, then the rate denies.
			dsAllow(t, l, 0, limiter.Request{Session: "s", User: "u2", Calls: 1}, dsAllowed)
			dsAllow(t, l, 0, limiter.Request{Session: "s", User: "u2", Calls: 1}, dsOutcome{Kind: limiter.Rate, Scope: limiter.Session, RetryAfter: 12 * time.Minute})
		})
	}
}

// TestDryRunOverTheWholeLimit checks that a dry run costing more than a
// spend limit holds is denied with no wait, as a real call is.
func TestDryRunOverTheWholeLimit(t *testing.T) {
	for name, mk := range dsStores() {
		t.Run(name, func(t *testing.T) {
			l := dsNew(t, mk(), limiter.Limit{Kind: limiter.Spend, Scope: limiter.Global, Max: 10, Window: time.Hour})
			dsAllow(t, l, 0, limiter.Request{Cost: 11, DryRun: true}, dsOutcome{Kind: limiter.Spend, Scope: limiter.Global})
			dsAllow(t, l, 0, limiter.Request{Cost: 10}, dsAllowed)
		})
	}
}

// TestDryRunRefundGivesBackOnlyItsCall checks that refunding a dry run
// gives back its call and no cost (it took none).
func TestDryRunRefundGivesBackOnlyItsCall(t *testing.T) {
	for name, mk := range dsStores() {
		t.Run(name, func(t *testing.T) {
			l := dsNew(t, mk(),
				limiter.Limit{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour},
				limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour})
			d := dsAllow(t, l, 0, limiter.Request{User: "u", Calls: 1, Cost: 10, DryRun: true}, dsAllowed)
			if err := l.Refund(context.Background(), t0, d); err != nil {
				t.Fatal(err)
			}
			dsAllow(t, l, 0, limiter.Request{User: "u", Calls: 1, Cost: 10}, dsAllowed)
		})
	}
}

// TestDryRunOnAStoreThatDoesNotPeek checks that a store that is not a
// PeekStore is never sent a dry run's cost (it would take it): the dry
// run is decided on its calls and slots alone, as before.
func TestDryRunOnAStoreThatDoesNotPeek(t *testing.T) {
	m := limiter.NewMemoryStore()
	var sent [][]limiter.Check
	s := limiter.StoreFunc(func(ctx context.Context, now time.Time, b *limiter.Batch) error {
		sent = append(sent, append([]limiter.Check(nil), b.Checks...))
		return m.Apply(ctx, now, b)
	})
	spend := limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour}
	rate := limiter.Limit{Kind: limiter.Rate, Scope: limiter.User, Max: 10, Window: time.Hour}
	l := dsNew(t, s, spend, rate)
	dsAllow(t, l, 0, limiter.Request{User: "u", Calls: 1, Cost: 11, DryRun: true}, dsAllowed)
	dsAllow(t, l, 0, limiter.Request{User: "u", Calls: 1, Cost: 10}, dsAllowed)
	want := [][]limiter.Check{
		{{ID: rate.ID(), Key: "u", Kind: limiter.Rate, Max: 10, Window: time.Hour, N: 1}},
		{{ID: spend.ID(), Key: "u", Kind: limiter.Spend, Max: 10, Window: time.Hour, N: 10}, {ID: rate.ID(), Key: "u", Kind: limiter.Rate, Max: 10, Window: time.Hour, N: 1}},
	}
	if diff := cmp.Diff(want, sent); diff != "" {
		t.Errorf("batches sent (-want +got):\n%s", diff)
	}
}

// TestDryRunSendsPeekChecks checks what a PeekStore is sent for a dry run:
// its spend checks marked Peek.
func TestDryRunSendsPeekChecks(t *testing.T) {
	m := limiter.NewMemoryStore()
	var sent []limiter.Check
	s := peeker{func(ctx context.Context, now time.Time, b *limiter.Batch) error {
		sent = append(sent, b.Checks...)
		return m.Apply(ctx, now, b)
	}}
	spend := limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour}
	conc := limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 1}
	l := dsNew(t, s, spend, conc)
	d := l.AllowAt(context.Background(), t0, limiter.Request{User: "u", Cost: 4, DryRun: true})
	if !d.Allowed {
		t.Fatalf("dry run: %+v", d)
	}
	want := []limiter.Check{
		{ID: spend.ID(), Key: "u", Kind: limiter.Spend, Max: 10, Window: time.Hour, N: 4, Peek: true},
		{ID: conc.ID(), Kind: limiter.Concurrency, Max: 1, N: 1},
	}
	if diff := cmp.Diff(want, sent); diff != "" {
		t.Errorf("checks sent (-want +got):\n%s", diff)
	}
	// The dry run holds its slot (as before) until released.
	dsAllow(t, l, 0, limiter.Request{User: "v", Cost: 1}, dsOutcome{Kind: limiter.Concurrency, Scope: limiter.Global})
	l.Release(d)
	dsAllow(t, l, 0, limiter.Request{User: "u", Cost: 10}, dsAllowed)
}

// TestMemoryStorePeekBatch checks Peek checks sent to a MemoryStore
// directly: evaluated, nothing taken, no state made.
func TestMemoryStorePeekBatch(t *testing.T) {
	m := limiter.NewMemoryStore()
	ctx := context.Background()
	spend := limiter.Check{ID: "s", Kind: limiter.Spend, Max: 10, Window: time.Hour, N: 10, Peek: true}
	conc := limiter.Check{ID: "c", Kind: limiter.Concurrency, Max: 1, N: 1, Peek: true}
	for range 3 {
		b := &limiter.Batch{Lease: 7, Checks: []limiter.Check{spend, conc}}
		if err := m.Apply(ctx, t0, b); err != nil || b.Denied != -1 {
			t.Fatalf("peek batch: %v, denied %d", err, b.Denied)
		}
	}
	if n := m.Len(); n != 0 {
		t.Errorf("Len after peek batches = %d, want 0", n)
	}
	spend.N = 10.5
	b := &limiter.Batch{Checks: []limiter.Check{spend}}
	if err := m.Apply(ctx, t0, b); err != nil || b.Denied != 0 || b.RetryAfter != -1 {
		t.Errorf("peek of 10.5 of 10: %v, denied %d, wait %v; want 0, -1", err, b.Denied, b.RetryAfter)
	}
	spend.Peek, spend.N, conc.Peek = false, 10, false
	b = &limiter.Batch{Lease: 8, Checks: []limiter.Check{spend, conc}}
	if err := m.Apply(ctx, t0, b); err != nil || b.Denied != -1 {
		t.Fatalf("real batch after the peeks: %v, denied %d", err, b.Denied)
	}
}

// TestDryRunNeverFailsARealCall runs real calls whose costs fill a spend
// limit exactly while dry runs of every size run alongside: no real call
// is denied (a dry run takes nothing, not even for a moment).
func TestDryRunNeverFailsARealCall(t *testing.T) {
	for name, mk := range dsStores() {
		t.Run(name, func(t *testing.T) {
			l := dsNew(t, mk(), limiter.Limit{Kind: limiter.Spend, Scope: limiter.Global, Max: 200, Window: time.Hour})
			ctx := context.Background()
			stop := make(chan struct{})
			var dry, real sync.WaitGroup
			for g := range 4 {
				dry.Add(1)
				go func() {
					defer dry.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						l.Release(l.AllowAt(ctx, t0, limiter.Request{Cost: float64(1 + (g+i)%200), DryRun: true}))
					}
				}()
			}
			denied := make(chan limiter.Decision, 200)
			for range 8 {
				real.Add(1)
				go func() {
					defer real.Done()
					for range 25 {
						if d := l.AllowAt(ctx, t0, limiter.Request{Cost: 1}); !d.Allowed {
							denied <- d
						}
					}
				}()
			}
			real.Wait()
			close(stop)
			dry.Wait()
			close(denied)
			for d := range denied {
				t.Errorf("a real call within the limit was denied: %+v", dsOutcomeOf(d))
			}
			dsAllow(t, l, 0, limiter.Request{Cost: 1, DryRun: true}, dsOutcome{Kind: limiter.Spend, Scope: limiter.Global, RetryAfter: 18 * time.Second})
		})
	}
}
