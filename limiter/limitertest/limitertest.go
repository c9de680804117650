package limitertest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/limiter"
)

// t0 is the time the kit's scenarios start at.
var t0 = time.Unix(1_700_000_000, 0)

// Run runs the conformance tests as subtests of t. newStore returns a store
// with no state for the limits and keys a subtest uses (a fresh store, or
// one under a fresh key prefix); it is called once per subtest. The refund
// subtests (named refund_*) run only for a store that is a
// [limiter.RefundStore] whose Refunds reports true, and are skipped for
// any other; release_twice_frees_one_slot runs only for a
// [limiter.LeaseStore] whose LeasesSlots reports true; the dry-run
// subtests (named dry_run_*) only for a [limiter.PeekStore] whose Peeks
// reports true.
func Run(t *testing.T, newStore func(t *testing.T) limiter.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s limiter.Store)
	}{
		{"exact_limit_under_concurrency", testExactUnderConcurrency},
		{"denied_consumes_nothing", testDeniedConsumesNothing},
		{"retry_after_is_exact", testRetryAfter},
		{"fractional_spend", testFractionalSpend},
		{"refill_and_burst_cap", testRefill},
		{"concurrency_slots_released", testConcurrency},
		{"release_twice_frees_one_slot", testReleaseTwice},
		{"scopes_and_tools", testScopesAndTools},
		{"tool_spellings_share_one_budget", testToolSpellings},
		{"cost_above_max_never_fits", testNever},
		{"keys_are_distinct", testKeysDistinct},
		{"extreme_amounts", testExtremeAmounts},
		{"time_going_back_gives_nothing", testTimeGoesBack},
		{"refund_restores_units", testRefundRestores},
		{"refund_of_denied_gives_nothing", testRefundDenied},
		{"refund_only_its_tool_and_keys", testRefundScopes},
		{"refund_later_stays_within_limit", testRefundLater},
		{"refund_keeps_slots", testRefundKeepsSlots},
		{"refund_tool_spellings", testRefundToolSpellings},
		{"dry_run_checks_spend_takes_nothing", testDryRunSpend},
		{"dry_run_never_fails_a_real_call", testDryRunRace},
		{"dry_run_tool_spellings", testDryRunToolSpellings},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newStore(t))
		})
	}
}

func newLimiter(t *testing.T, s limiter.Store, limits ...limiter.Limit) *limiter.Limiter {
	t.Helper()
	l, err := limiter.New(limits, &limiter.Options{Store: s})
	if err != nil {
		t.Fatalf("limiter.New(%v): %v", limits, err)
	}
	return l
}

// outcome is the comparable part of a Decision.
type outcome struct {
	Allowed    bool
	Kind       limiter.Kind
	Scope      limiter.Scope
	RetryAfter time.Duration
	Err        string
}

func outcomeOf(d limiter.Decision) outcome {
	o := outcome{Allowed: d.Allowed, Kind: d.Limit.Kind, Scope: d.Limit.Scope, RetryAfter: d.RetryAfter}
	if d.Err != nil {
		o.Err = d.Err.Error()
	}
	return o
}

var allowed = outcome{Allowed: true}

// step is one call at an offset from t0 and its expected outcome.
type step struct {
	at   time.Duration
	req  limiter.Request
	want outcome
}

func runSteps(t *testing.T, l *limiter.Limiter, steps []step) {
	t.Helper()
	for i, s := range steps {
		d := l.AllowAt(context.Background(), t0.Add(s.at), s.req)
		if diff := cmp.Diff(s.want, outcomeOf(d)); diff != "" {
			t.Errorf("step %d: AllowAt(t0+%v, %+v) mismatch (-want +got):\n%s", i, s.at, s.req, diff)
		}
		l.Release(d)
	}
}

func denied(k limiter.Kind, s limiter.Scope, retry time.Duration) outcome {
	return outcome{Kind: k, Scope: s, RetryAfter: retry}
}

func testExactUnderConcurrency(t *testing.T, s limiter.Store) {
	const goroutines, calls = 8, 25
	l := newLimiter(t, s,
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 70, Window: time.Hour},
		limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 30, Window: time.Hour},
		limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 1000},
	)
	// Rate binds on session "a" (70 calls); spend binds on user "u" through
	// session "b" (cost 0.5: 60 calls). Both run at once from many
	// goroutines; the user's spend is shared by both sessions.
	var okA, okB atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				sess, cost, n := "a", 0.0, &okA
				if g%2 == 1 {
					sess, cost, n = "b", 0.5, &okB
				}
				d := l.AllowAt(context.Background(), t0, limiter.Request{Session: sess, User: "u", Calls: 1, Cost: cost})
				if d.Err != nil {
					t.Errorf("AllowAt: %v", d.Err)
				}
				if d.Allowed {
					n.Add(1)
				}
				l.Release(d)
			}
		}()
	}
	wg.Wait()
	// Session "a": 100 attempts, 70 allowed. Session "b": 100 attempts at
	// 0.5 against a spend of 30: 60 allowed.
	if got := okA.Load(); got != 70 {
		t.Errorf("session a: %d calls allowed, want exactly 70", got)
	}
	if got := okB.Load(); got != 60 {
		t.Errorf("session b: %d calls allowed, want exactly 60", got)
	}

	// In-flight slots, held rather than released: exactly Max at once.
	c := newLimiter(t, s, limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.User, Max: 7})
	var mu sync.Mutex
	var held []limiter.Decision
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				d := c.AllowAt(context.Background(), t0, limiter.Request{User: "conc", Calls: 1})
				if d.Allowed {
					mu.Lock()
					held = append(held, d)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(held) != 7 {
		t.Errorf("%d slots taken concurrently, want exactly 7", len(held))
	}
	for _, d := range held {
		c.Release(d)
	}
	for i := range 7 {
		if d := c.AllowAt(context.Background(), t0, limiter.Request{User: "conc"}); !d.Allowed {
			t.Errorf("after release, call %d denied: %+v", i, outcomeOf(d))
		}
	}
}

func testDeniedConsumesNothing(t *testing.T, s limiter.Store) {
	t.Run("rate_across_scopes", func(t *testing.T) {
		l := newLimiter(t, s,
			limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 3, Window: time.Minute},
			limiter.Limit{Kind: limiter.Rate, Scope: limiter.User, Max: 5, Window: time.Minute},
		)
		a := limiter.Request{Session: "r-a", User: "r-u", Calls: 1}
		b := limiter.Request{Session: "r-b", User: "r-u", Calls: 1}
		runSteps(t, l, []step{
			{0, a, allowed}, {0, a, allowed}, {0, a, allowed},
			// Denied by the session: the user's budget is untouched.
			{0, a, denied(limiter.Rate, limiter.Session, 20*time.Second)},
			{0, a, denied(limiter.Rate, limiter.Session, 20*time.Second)},
			{0, b, allowed}, {0, b, allowed},
			// The user's 5 are spent; session b still has one.
			{0, b, denied(limiter.Rate, limiter.User, 12*time.Second)},
		})
	})
	t.Run("spend_across_scopes", func(t *testing.T) {
		l := newLimiter(t, s,
			limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 10, Window: time.Minute},
			limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 15, Window: time.Minute},
		)
		a := func(cost float64) limiter.Request { return limiter.Request{Session: "s-a", User: "s-u", Cost: cost} }
		b := func(cost float64) limiter.Request { return limiter.Request{Session: "s-b", User: "s-u", Cost: cost} }
		runSteps(t, l, []step{
			{0, a(8), allowed},
			// 8+5 > 10: denied by the session, needs 3 units back (18s).
			{0, a(5), denied(limiter.Spend, limiter.Session, 18*time.Second)},
			// The user still has 7: a denied call took nothing.
			{0, b(7), allowed},
			{0, b(1), denied(limiter.Spend, limiter.User, 4*time.Second)},
			{0, a(2), denied(limiter.Spend, limiter.User, 8*time.Second)},
		})
	})
	t.Run("concurrency_denial_takes_no_rate", func(t *testing.T) {
		l := newLimiter(t, s,
			limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 1},
			limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 2, Window: time.Minute},
			limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 2, Window: time.Minute},
		)
		r := limiter.Request{Session: "c-a", Calls: 1, Cost: 1}
		first := l.AllowAt(context.Background(), t0, r)
		if !first.Allowed {
			t.Fatalf("first call denied: %+v", outcomeOf(first))
		}
		for range 3 {
			d := l.AllowAt(context.Background(), t0, r)
			if diff := cmp.Diff(denied(limiter.Concurrency, limiter.Global, 0), outcomeOf(d)); diff != "" {
				t.Errorf("while the slot is held (-want +got):\n%s", diff)
			}
			l.Release(d)
		}
		l.Release(first)
		runSteps(t, l, []step{
			{0, r, allowed},
			{0, r, denied(limiter.Rate, limiter.Session, 30*time.Second)},
		})
	})
}

func testRetryAfter(t *testing.T, s limiter.Store) {
	l := newLimiter(t, s,
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 5, Window: time.Minute},
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.User, Max: 60, Window: time.Minute},
		limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: 100 * time.Second},
	)
	r := func(sess string, cost float64) limiter.Request {
		return limiter.Request{Session: sess, User: "ra-u", Calls: 1, Cost: cost}
	}
	runSteps(t, l, []step{
		{0, r("ra-a", 0), allowed}, {0, r("ra-a", 0), allowed}, {0, r("ra-a", 0), allowed},
		{0, r("ra-a", 0), allowed}, {0, r("ra-a", 0), allowed},
		{0, r("ra-a", 0), denied(limiter.Rate, limiter.Session, 12*time.Second)},
		{12*time.Second - time.Millisecond, r("ra-a", 0), denied(limiter.Rate, limiter.Session, time.Millisecond)},
		{12 * time.Second, r("ra-a", 0), allowed},
		{12 * time.Second, r("ra-a", 0), denied(limiter.Rate, limiter.Session, 12*time.Second)},
		// Spend: 9.5 of 10 used; a cost of 3 needs 2.5 units back (25s).
		{20 * time.Second, r("ra-b", 9.5), allowed},
		{20 * time.Second, r("ra-b", 3), denied(limiter.Spend, limiter.User, 25*time.Second)},
		{45*time.Second - time.Millisecond, r("ra-b", 3), denied(limiter.Spend, limiter.User, time.Millisecond)},
		{45 * time.Second, r("ra-b", 3), allowed},
		// Two scopes deny: the wait is the longer one, after which both allow.
		{45 * time.Second, r("ra-a", 1), denied(limiter.Spend, limiter.User, 10*time.Second)},
		{55 * time.Second, r("ra-a", 1), allowed},
	})
}

func testFractionalSpend(t *testing.T, s limiter.Store) {
	l := newLimiter(t, s, limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 10, Window: time.Minute})
	for _, tc := range []struct {
		cost float64
		want int
	}{{0.1, 100}, {0.3, 33}, {1.0 / 3, 30}, {2.5, 4}, {0.7, 14}} {
		sess := fmt.Sprintf("frac-%v", tc.cost)
		n := 0
		for range 200 {
			if l.AllowAt(context.Background(), t0, limiter.Request{Session: sess, Cost: tc.cost}).Allowed {
				n++
			}
		}
		if n != tc.want {
			t.Errorf("cost %v against 10 units: %d calls allowed, want %d", tc.cost, n, tc.want)
		}
	}
}

func testRefill(t *testing.T, s limiter.Store) {
	l := newLimiter(t, s, limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 2, Window: time.Second})
	r := limiter.Request{Session: "refill", Calls: 1}
	runSteps(t, l, []step{
		{0, r, allowed}, {0, r, allowed},
		{0, r, denied(limiter.Rate, limiter.Session, 500*time.Millisecond)},
		{500 * time.Millisecond, r, allowed},
		{500 * time.Millisecond, r, denied(limiter.Rate, limiter.Session, 500*time.Millisecond)},
		// Idle far longer than the window: the burst is still only Max.
		{time.Hour, r, allowed}, {time.Hour, r, allowed},
		{time.Hour, r, denied(limiter.Rate, limiter.Session, 500*time.Millisecond)},
		// At an even pace, one call per 500ms passes forever.
		{time.Hour + 500*time.Millisecond, r, allowed},
		{time.Hour + 1000*time.Millisecond, r, allowed},
		{time.Hour + 1500*time.Millisecond, r, allowed},
		{time.Hour + 1500*time.Millisecond, r, denied(limiter.Rate, limiter.Session, 500*time.Millisecond)},
		// Calls: 0 (a retry already counted) passes even with no budget.
		{time.Hour + 1500*time.Millisecond, limiter.Request{Session: "refill"}, allowed},
	})
}

func testConcurrency(t *testing.T, s limiter.Store) {
	l := newLimiter(t, s,
		limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.User, Max: 2},
		limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 3},
	)
	ctx := context.Background()
	u := limiter.Request{User: "cc-u", Calls: 1}
	v := limiter.Request{User: "cc-v", Calls: 1}
	d1, d2 := l.AllowAt(ctx, t0, u), l.AllowAt(ctx, t0, u)
	if !d1.Allowed || !d2.Allowed {
		t.Fatalf("two calls of 2 slots: %+v, %+v", outcomeOf(d1), outcomeOf(d2))
	}
	if diff := cmp.Diff(denied(limiter.Concurrency, limiter.User, 0), outcomeOf(l.AllowAt(ctx, t0, u))); diff != "" {
		t.Errorf("third call of user (-want +got):\n%s", diff)
	}
	d3 := l.AllowAt(ctx, t0, v)
	if !d3.Allowed {
		t.Fatalf("other user: %+v", outcomeOf(d3))
	}
	if diff := cmp.Diff(denied(limiter.Concurrency, limiter.Global, 0), outcomeOf(l.AllowAt(ctx, t0, v))); diff != "" {
		t.Errorf("fourth call overall (-want +got):\n%s", diff)
	}

	// A call that panics releases its slot through defer.
	func() {
		defer func() { _ = recover() }()
		defer l.Release(d1)
		panic("handler panicked")
	}()
	// A call whose context is cancelled releases its slot too.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	<-cctx.Done()
	l.Release(d2)

	// Releasing a Decision that holds nothing does nothing.
	l.Release(limiter.Decision{})
	l.Release(l.AllowAt(ctx, t0, limiter.Request{User: "cc-w", Cost: -1}))

	got := []bool{l.AllowAt(ctx, t0, u).Allowed, l.AllowAt(ctx, t0, u).Allowed, l.AllowAt(ctx, t0, u).Allowed}
	if diff := cmp.Diff([]bool{true, true, false}, got); diff != "" {
		t.Errorf("after releases, calls of user (-want +got):\n%s", diff)
	}
}

func testScopesAndTools(t *testing.T, s limiter.Store) {
	l := newLimiter(t, s,
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Tool: "refund", Max: 1, Window: time.Minute},
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.Global, Max: 4, Window: time.Minute},
	)
	refund := func(sess string) limiter.Request { return limiter.Request{Session: sess, Tool: "refund", Calls: 1} }
	read := func(sess string) limiter.Request { return limiter.Request{Session: sess, Tool: "read", Calls: 1} }
	runSteps(t, l, []step{
		{0, refund("st-a"), allowed},
		{0, refund("st-a"), denied(limiter.Rate, limiter.Session, time.Minute)},
		{0, read("st-a"), allowed},
		{0, refund("st-b"), allowed},
		{0, read("st-b"), allowed},
		{0, read("st-c"), denied(limiter.Rate, limiter.Global, 15*time.Second)},
	})
}

func testNever(t *testing.T, s limiter.Store) {
	l := newLimiter(t, s,
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 5, Window: time.Minute},
		limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 10, Window: time.Minute},
	)
	runSteps(t, l, []step{
		{0, limiter.Request{Session: "nv", Calls: 1, Cost: 10.5}, denied(limiter.Spend, limiter.Session, 0)},
		// It took nothing: the full budget remains.
		{0, limiter.Request{Session: "nv", Calls: 1, Cost: 10}, allowed},
	})
	bad := l.AllowAt(context.Background(), t0, limiter.Request{Session: "nv", Calls: 1, Cost: -1})
	if bad.Allowed || bad.Err == nil {
		t.Errorf("cost -1: got %+v, want a denial with an error", outcomeOf(bad))
	}
}
