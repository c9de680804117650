package limitertest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/limiter"
)

// needRefunds skips the test unless s refunds.
func needRefunds(t *testing.T, s limiter.Store) {
	t.Helper()
	if rs, ok := s.(limiter.RefundStore); !ok || !rs.Refunds() {
		t.Skipf("%T does not refund (it is not a limiter.RefundStore whose Refunds reports true)", s)
	}
}

// allowAt calls l.AllowAt at t0+at and checks the outcome. A Decision
// that holds slots is left for the caller to release.
func allowAt(t *testing.T, l *limiter.Limiter, at time.Duration, r limiter.Request, want outcome) limiter.Decision {
	t.Helper()
	d := l.AllowAt(context.Background(), t0.Add(at), r)
	if diff := cmp.Diff(want, outcomeOf(d)); diff != "" {
		t.Errorf("AllowAt(t0+%v, %+v) mismatch (-want +got):\n%s", at, r, diff)
	}
	return d
}

// refundAt calls l.Refund at t0+at and reports an error.
func refundAt(t *testing.T, l *limiter.Limiter, at time.Duration, d limiter.Decision) {
	t.Helper()
	if err := l.Refund(context.Background(), t0.Add(at), d); err != nil {
		t.Errorf("Refund(t0+%v, %+v): %v", at, outcomeOf(d), err)
	}
}

// testRefundRestores checks that a refund right after a decision restores
// every rate and spend bucket it took from, exactly, and gives back only
// what the decision took.
func testRefundRestores(t *testing.T, s limiter.Store) {
	needRefunds(t, s)
	l := newLimiter(t, s,
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 2, Window: time.Minute},
		limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 8, Window: time.Minute},
	)
	t.Run("rate_and_spend", func(t *testing.T) {
		// Two calls of cost 4 use up both limits at once.
		r := limiter.Request{Session: "rf-a", Calls: 1, Cost: 4}
		full := denied(limiter.Rate, limiter.Session, 30*time.Second)
		allowAt(t, l, 0, r, allowed)
		d := allowAt(t, l, 0, r, allowed)
		allowAt(t, l, 0, r, full)
		refundAt(t, l, 0, d)
		// The call and its cost are back: one more call of the same size,
		// and then the state is exactly the one before the refund.
		allowAt(t, l, 0, r, allowed)
		allowAt(t, l, 0, r, full)
	})
	t.Run("cost_only", func(t *testing.T) {
		// A decision that counted no call (a verified retry) gives back
		// its cost and no call.
		spend := allowAt(t, l, 0, limiter.Request{Session: "rf-b", Cost: 8}, allowed)
		call := limiter.Request{Session: "rf-b", Calls: 1}
		allowAt(t, l, 0, call, allowed)
		allowAt(t, l, 0, call, allowed)
		refundAt(t, l, 0, spend)
		allowAt(t, l, 0, limiter.Request{Session: "rf-b", Cost: 8}, allowed)
		allowAt(t, l, 0, limiter.Request{Session: "rf-b", Cost: 0.5}, denied(limiter.Spend, limiter.Session, 3750*time.Millisecond))
		allowAt(t, l, 0, call, denied(limiter.Rate, limiter.Session, 30*time.Second))
	})
}

// testRefundDenied checks that refunding a Decision that took nothing
// (denied, invalid, or counting neither calls nor cost) gives nothing.
func testRefundDenied(t *testing.T, s limiter.Store) {
	needRefunds(t, s)
	l := newLimiter(t, s,
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 1, Window: time.Minute},
		limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 5, Window: time.Minute},
	)
	r := limiter.Request{Session: "rd", Calls: 1, Cost: 1}
	full := denied(limiter.Rate, limiter.Session, time.Minute)
	allowAt(t, l, 0, r, allowed)
	refundAt(t, l, 0, allowAt(t, l, 0, r, full))
	refundAt(t, l, 0, limiter.Decision{})
	invalid := l.AllowAt(context.Background(), t0, limiter.Request{Session: "rd", Calls: 1, Cost: -1})
	if invalid.Allowed || invalid.Err == nil {
		t.Errorf("cost -1: got %+v, want a denial with an error", outcomeOf(invalid))
	}
	refundAt(t, l, 0, invalid)
	refundAt(t, l, 0, allowAt(t, l, 0, limiter.Request{Session: "rd"}, allowed))
	// Nothing came back: the call is still denied, and the spend holds
	// exactly the 4 units the allowed call left.
	allowAt(t, l, 0, r, full)
	allowAt(t, l, 0, limiter.Request{Session: "rd", Cost: 4}, allowed)
	allowAt(t, l, 0, limiter.Request{Session: "rd", Cost: 0.5}, denied(limiter.Spend, limiter.Session, 6*time.Second))
}

// testRefundScopes checks that a refund gives back only to the limits that
// applied to the decision's tool, under its own session and user.
func testRefundScopes(t *testing.T, s limiter.Store) {
	needRefunds(t, s)
	l := newLimiter(t, s,
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Tool: "pay", Max: 1, Window: time.Minute},
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.User, Max: 2, Window: time.Minute},
		limiter.Limit{Kind: limiter.Spend, Scope: limiter.Global, Tool: "pay", Max: 10, Window: time.Minute},
	)
	pay := func(sess, user string) limiter.Request {
		return limiter.Request{Session: sess, User: user, Tool: "pay", Calls: 1, Cost: 5}
	}
	read := func(sess, user string) limiter.Request {
		return limiter.Request{Session: sess, User: user, Tool: "read", Calls: 1, Cost: 5}
	}
	byUser := denied(limiter.Rate, limiter.User, 30*time.Second)
	paid := allowAt(t, l, 0, pay("rs-1", "rs-u1"), allowed)
	readD := allowAt(t, l, 0, read("rs-1", "rs-u1"), allowed)
	allowAt(t, l, 0, pay("rs-2", "rs-u2"), allowed)
	// The read gives back one call of user u1, and nothing else: not its
	// cost to the spend of "pay", not the session's "pay" rate, not u2.
	refundAt(t, l, 0, readD)
	allowAt(t, l, 0, pay("rs-3", "rs-u3"), denied(limiter.Spend, limiter.Global, 30*time.Second))
	allowAt(t, l, 0, pay("rs-1", "rs-u9"), denied(limiter.Rate, limiter.Session, time.Minute))
	allowAt(t, l, 0, read("rs-1", "rs-u1"), allowed)
	allowAt(t, l, 0, read("rs-1", "rs-u1"), byUser)
	allowAt(t, l, 0, read("rs-4", "rs-u2"), allowed)
	allowAt(t, l, 0, read("rs-4", "rs-u2"), byUser)
	// The payment gives back to all three: its session's "pay" rate, its
	// user's rate and the global spend of "pay".
	refundAt(t, l, 0, paid)
	allowAt(t, l, 0, read("rs-5", "rs-u1"), allowed)
	allowAt(t, l, 0, read("rs-5", "rs-u1"), byUser)
	allowAt(t, l, 0, pay("rs-1", "rs-u9"), allowed)
	allowAt(t, l, 0, pay("rs-6", "rs-u8"), denied(limiter.Spend, limiter.Global, 30*time.Second))
}

// testRefundLater checks refunds made some time after the decision: the
// decision's increment (Window × calls / Max) comes back less the time
// since the decision, or nothing when that time is as long, so that a
// refund never gives back refill the bucket lost while it would have been
// full without the decision, nor units that other calls took: counting a
// refunded call as not run, no more calls run than the limit allows, and no
// more than a limiter that never saw the refunded call lets through.
func testRefundLater(t *testing.T, s limiter.Store) {
	needRefunds(t, s)
	const max, window = 4, 4 * time.Minute // one call per minute
	l := newLimiter(t, s, limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: max, Window: window})
	r := limiter.Request{Session: "rl", Calls: 1}
	ran := 0
	call := func(l *limiter.Limiter, r limiter.Request, at time.Duration, want outcome) limiter.Decision {
		t.Helper()
		d := allowAt(t, l, at, r, want)
		if d.Allowed {
			ran++
		}
		return d
	}
	var first [max]limiter.Decision
	for i := range first {
		first[i] = call(l, r, 0, allowed)
	}
	call(l, r, 0, denied(limiter.Rate, limiter.Session, time.Minute))
	// 30 s later, half of a call's minute comes back: the bucket, full again
	// half a minute sooner, takes one call and then waits a minute.
	refundAt(t, l, 30*time.Second, first[3])
	ran--
	call(l, r, 30*time.Second, allowed)
	call(l, r, 30*time.Second, denied(limiter.Rate, limiter.Session, time.Minute))
	// 2.5 minutes after t0, two more calls have refilled.
	const later = 150 * time.Second
	call(l, r, later, allowed)
	call(l, r, later, allowed)
	call(l, r, later, denied(limiter.Rate, limiter.Session, time.Minute))
	// A call taken at t0 and refunded now, later than its increment:
	// nothing comes back and the call counts as run.
	refundAt(t, l, later, first[0])
	call(l, r, later, denied(limiter.Rate, limiter.Session, time.Minute))
	// Over 2.5 minutes the limit allows max + max*2.5m/window calls.
	if limit := max + max*later.Seconds()/window.Seconds(); float64(ran) > limit {
		t.Errorf("%d calls ran (allowed and not refunded) from t0 to t0+%v, the limit allows %v", ran, later, limit)
	}
	// An hour later the bucket is full: a refund gives it nothing more.
	refundAt(t, l, time.Hour, first[1])
	for range max {
		call(l, r, time.Hour, allowed)
	}
	call(l, r, time.Hour, denied(limiter.Rate, limiter.Session, time.Minute))

	// A bucket that refilled completely and was drawn on again: a late
	// refund of the first call must not give back the second's units.
	r2 := limiter.Request{Session: "rl-refilled", Calls: max}
	d1 := call(l, r2, 0, allowed)
	call(l, r2, window+time.Minute, allowed) // full again since t0+4m
	refundAt(t, l, window+time.Minute, d1)
	call(l, r2, window+time.Minute, denied(limiter.Rate, limiter.Session, window))

	// A call on a full bucket refunded 30 s later, after another call:
	// without it the bucket would have stayed full those 30 s, its refill
	// lost, so only the other 30 s of its minute come back, and the bucket
	// ends as a limiter that never saw it has it: 2 per 2 minutes, the
	// other call at 30 s, one more then, and nothing until 1m30s.
	l2 := newLimiter(t, s, limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 2, Window: 2 * time.Minute})
	r3 := limiter.Request{Session: "rl-lost", Calls: 1}
	d := call(l2, r3, 0, allowed)
	call(l2, r3, 30*time.Second, allowed)
	refundAt(t, l2, 30*time.Second, d)
	call(l2, r3, 30*time.Second, allowed)
	call(l2, r3, time.Minute, denied(limiter.Rate, limiter.Session, 30*time.Second))
}

// testRefundKeepsSlots checks that a refund gives back calls but no
// in-flight slot, which only Release frees.
func testRefundKeepsSlots(t *testing.T, s limiter.Store) {
	needRefunds(t, s)
	l := newLimiter(t, s,
		limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 1},
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 1, Window: time.Minute},
	)
	r := limiter.Request{Session: "rk", Calls: 1}
	d := allowAt(t, l, 0, r, allowed)
	refundAt(t, l, 0, d)
	allowAt(t, l, 0, r, denied(limiter.Concurrency, limiter.Global, 0))
	l.Release(d)
	l.Release(allowAt(t, l, 0, r, allowed))
	allowAt(t, l, 0, r, denied(limiter.Rate, limiter.Session, time.Minute))
}
