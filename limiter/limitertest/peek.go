package limitertest

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// needPeeks skips the test unless s peeks.
func needPeeks(t *testing.T, s limiter.Store) {
	t.Helper()
	if ps, ok := s.(limiter.PeekStore); !ok || !ps.Peeks() {
		t.Skipf("%T does not peek (it is not a limiter.PeekStore whose Peeks reports true)", s)
	}
}

// testDryRunSpend checks that a dry run ([limiter.Request].DryRun, whose
// spend checks are Peek checks) is denied exactly as a real call at the
// same instant would be, takes no cost when it fits, and still takes its
// call from the rate (none when denied).
func testDryRunSpend(t *testing.T, s limiter.Store) {
	needPeeks(t, s)
	l := newLimiter(t, s,
		limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour},
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 5, Window: time.Hour},
	)
	req := func(sess string, cost float64, dry bool) limiter.Request {
		return limiter.Request{Session: sess, User: "pk-u", Calls: 1, Cost: cost, DryRun: dry}
	}
	runSteps(t, l, []step{
		{0, req("pk-a", 7, false), allowed},
		// 5 does not fit in the 3 left: the real call's denial, twice.
		{0, req("pk-a", 5, true), denied(limiter.Spend, limiter.User, 12*time.Minute)},
		{0, req("pk-a", 5, true), denied(limiter.Spend, limiter.User, 12*time.Minute)},
		// More than the limit holds: never.
		{0, req("pk-a", 11, true), denied(limiter.Spend, limiter.User, 0)},
		// 3 fits, as often as asked: nothing is taken.
		{0, req("pk-a", 3, true), allowed},
		{0, req("pk-a", 3, true), allowed},
		{0, req("pk-a", 3, false), allowed},
		{0, req("pk-b", 0.001, true), denied(limiter.Spend, limiter.User, 360*time.Millisecond)},
		// Session pk-a counted 4 calls (the denied dry runs none).
		{0, limiter.Request{Session: "pk-a", Calls: 1}, allowed},
		{0, limiter.Request{Session: "pk-a", Calls: 1}, denied(limiter.Rate, limiter.Session, 12*time.Minute)},
		// As the bucket refills: denied a microsecond before the wait
		// ends, allowed at its end, and the real call then fits, once.
		{360*time.Millisecond - time.Microsecond, req("pk-c", 0.001, true), denied(limiter.Spend, limiter.User, time.Microsecond)},
		{360 * time.Millisecond, req("pk-c", 0.001, true), allowed},
		{360 * time.Millisecond, req("pk-c", 0.001, false), allowed},
		{360 * time.Millisecond, req("pk-c", 0.001, true), denied(limiter.Spend, limiter.User, 360*time.Millisecond)},
	})
}

// testDryRunRace runs real calls that fill a spend limit exactly, with
// dry runs alongside: some of every size, others asking for just what is
// left (as the real calls have counted it), the dry runs that a store
// taking their cost even for a moment would make a real call fail for. No
// real call is denied. It runs a few rounds, on fresh keys, since the
// moment such a store holds the cost may be short.
func testDryRunRace(t *testing.T, s limiter.Store) {
	needPeeks(t, s)
	const budget, rounds = 60, 8
	l := newLimiter(t, s, limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: budget, Window: time.Hour})
	ctx := context.Background()
	for round := range rounds {
		user := "pk-race-" + strconv.Itoa(round)
		var spent atomic.Int64 // real calls allowed so far
		stop := make(chan struct{})
		var dry, real sync.WaitGroup
		for g := range 3 {
			dry.Add(1)
			go func() {
				defer dry.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					cost := float64(1 + (g+i)%budget)
					if g > 0 {
						// What is left, or a little less (the count lags).
						cost = float64(max(budget-spent.Load()-int64(i%4), 1))
					}
					d := l.AllowAt(ctx, t0, limiter.Request{User: user, Cost: cost, DryRun: true})
					if d.Err != nil {
						t.Errorf("dry run: %v", d.Err)
						return
					}
				}
			}()
		}
		for range 6 {
			real.Add(1)
			go func() {
				defer real.Done()
				for range budget / 6 {
					d := l.AllowAt(ctx, t0, limiter.Request{User: user, Cost: 1})
					if !d.Allowed {
						t.Errorf("round %d: a real call within the limit was denied: %+v", round, outcomeOf(d))
						continue
					}
					spent.Add(1)
				}
			}()
		}
		real.Wait()
		close(stop)
		dry.Wait()
		runSteps(t, l, []step{{0, limiter.Request{User: user, Cost: 1, DryRun: true}, denied(limiter.Spend, limiter.User, time.Minute)}})
		if t.Failed() {
			return
		}
	}
}
