package limiter

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Refund gives back to every Rate and Spend limit the units that the
// allowed Decision d took from it (d's calls to Rate limits, its cost to
// Spend limits, under d's session and user keys, and only to the limits
// that applied to d's tool), for a call that was admitted but never ran:
// one refused after AllowAt by a later step, such as a write whose audit
// record could not be made. d must come from l.
//
// Each bucket moves back by what the reservation moved it forward (the
// limit's Window × N / Max, N being d's calls or cost) less the time from
// AllowAt's now to Refund's now, never past full, and not at all when that
// time is as long as the increment or longer. A refund right after AllowAt
// thus restores the state before it. The time is kept because, without d,
// the bucket may have been full meanwhile, its refill lost, or have
// refilled and been drawn on by other calls, whose units a refund must
// not give back: a refunded call never lets more calls through than a
// limiter that never saw it would, and one refunded late keeps part of its
// units, or all of them ([Limiter.Kept] tells how much). Stores with their
// own clock (Redis) refund at their own time rather than now; the time
// since d is measured between the nows passed to AllowAt and Refund, on the
// monotonic clock when both are readings of [time.Now] (as the
// [MemoryStore] measures), so that a step of the wall clock between them
// changes nothing.
//
// Refund does not free d's in-flight slots: [Limiter.Release] still does
// that, exactly once, whether or not d was refunded.
//
// A Decision that was not allowed, that took nothing (no calls and no cost,
// or no Rate or Spend limit applied to its tool), or that was allowed only
// because the store failed (fail open: its Err is set and nothing is known
// to have been taken) gives back nothing, and Refund returns nil.
//
// Call Refund at most once per Decision. Refunds are not idempotent: a
// second Refund of the same Decision gives back its units again, units that
// other calls took, in both built-in stores: the [MemoryStore] and the
// Redis store each move the buckets back once more, never past full.
//
// When l's store is not a [RefundStore] whose Refunds reports true, Refund
// changes nothing and returns an error that unwraps to
// [ErrRefundUnsupported]. ctx bounds the store's work, as in AllowAt (a
// nil ctx is taken as [context.Background]). When the store fails
// (unreachable, too slow, or ctx is done), Refund returns an error that
// unwraps to [ErrStoreUnavailable]; the store then has given back nothing,
// as far as it can tell. On the in-memory store it never fails and, like
// AllowAt, does not allocate.
func (l *Limiter) Refund(ctx context.Context, now time.Time, d Decision) error {
	if !d.Allowed || d.calls == 0 && d.cost == 0 {
		return nil
	}
	if l.memStore != nil {
		l.refundMemory(now, &d)
		return nil
	}
	r := Request{Session: d.session, User: d.user, Tool: d.tool, Calls: d.calls, Cost: d.cost}
	checks, _ := l.build(make([]Check, 0, len(l.limits)), r, opRefund, 0)
	if len(checks) == 0 {
		return nil
	}
	if !l.refunds {
		return fmt.Errorf("%w: %T is not a RefundStore whose Refunds reports true", ErrRefundUnsupported, l.store)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	elapsed := max(time.Duration(l.since(now, &d)), 0)
	b := &Batch{Refund: true, Lease: l.lease.Add(1), Checks: checks, Elapsed: elapsed}
	if err := l.apply(ctx, now, b); err != nil {
		return fmt.Errorf("%w: refund: %w", ErrStoreUnavailable, err)
	}
	return nil
}

// Kept returns the share of d's cost, from 0 to 1, that a Refund of d at
// now leaves taken from the Spend limit that keeps the most of it: 0 when
// d took no cost or a refund at now gives all of it back, 1 when it gives
// nothing back (see Refund). It is rounded to the nearest thousandth, so
// that the moments between a decision and a refund right after it read as
// nothing kept. A caller recording a refunded call's cost records d's cost
// times Kept.
func (l *Limiter) Kept(now time.Time, d Decision) float64 {
	if !d.Allowed || d.cost == 0 {
		return 0
	}
	var elapsed int64
	if l.memStore != nil {
		elapsed = l.memStore.nanos(now) - d.at
	} else {
		elapsed = l.since(now, &d)
	}
	if elapsed <= 0 {
		return 0
	}
	kept := 0.0
	var k *calledKey // made only with limits for one tool: its zeroing costs
	if l.toolKeys != nil {
		k = new(calledKey)
	}
	for i := range l.limits {
		lim := &l.limits[i]
		if lim.Kind != Spend || !l.applies(i, d.tool, k) {
			continue
		}
		share := 1.0
		if inc := span(int64(lim.Window), d.cost, lim.Max); inc > float64(elapsed) {
			share = float64(elapsed) / inc
		}
		kept = max(kept, share)
	}
	return math.Round(kept*1000) / 1000
}

// The kinds of Decision.at on a store other than the memory one (see
// stamp).
const (
	atClock uint8 = iota // a reading of l's clock for a now within int64 nanoseconds
	atZero               // a reading of l's clock for the zero time passed as now
	atEarly              // the Unix nanoseconds (wrapped) of another now outside them
)

// stamp returns t in nanoseconds for the time between a decision and its
// refund on a store with its own clock, and its kind: on l's clock (see
// clock: the monotonic time since l was made, for a reading of time.Now),
// so that a step of the wall clock between the two changes neither
// Refund's Elapsed nor Kept. A caller of such a store may pass any now, the
// zero time say, which the store ignores: the zero time reads the clock
// instead. Another t outside the range of int64 nanoseconds (before 1678,
// after 2262) is a test's clock, which a store deciding at the time it is
// given (the Redis store's ClientTime) decides at: it counts as its Unix
// nanoseconds, wrapped, whose differences are exact within 292 years. The
// in-memory store measures on its own clock (see MemoryStore), in which its
// buckets are.
func (l *Limiter) stamp(t time.Time) (int64, uint8) {
	switch {
	case t.IsZero():
		return l.clock.nanos(time.Now()), atZero
	case t.Before(minNano) || t.After(maxNano):
		return wrappedNano(t), atEarly
	}
	return l.clock.nanos(t), atClock
}

// since returns the time from d's now to now (see stamp), on a store other
// than the memory one: the difference of their stamps when both read the
// clock or both are early times; from the zero time when one of them is
// the zero time and the other an early time (a test's clock that starts at
// the zero time); and, for a clock read at one end and an early time at the
// other (a test's clock crossing 1678 or 2262), a time longer than any
// increment, so that a refund gives back nothing rather than too much.
func (l *Limiter) since(now time.Time, d *Decision) int64 {
	x, k := l.stamp(now)
	at, ak := d.at, d.atKind
	switch {
	case k == atEarly && ak == atZero:
		at, ak = wrappedNano(time.Time{}), atEarly
	case k == atZero && ak == atEarly:
		x, k = wrappedNano(time.Time{}), atEarly
	}
	if (k == atEarly) != (ak == atEarly) {
		return math.MaxInt64
	}
	return x - at // wraps for early times, exactly within 292 years
}

// wrappedNano returns t's Unix nanoseconds modulo 2^64.
func wrappedNano(t time.Time) int64 {
	return t.Unix()*int64(time.Second) + int64(t.Nanosecond())
}

var (
	minNano = time.Unix(0, math.MinInt64)
	maxNano = time.Unix(0, math.MaxInt64)
)

// refundMemory is Refund on the in-memory store, without allocating for up
// to stackChecks limits.
func (l *Limiter) refundMemory(now time.Time, d *Decision) {
	var buf [stackChecks]memCheck
	cs := buf[:0]
	if len(l.limits) > stackChecks {
		cs = make([]memCheck, 0, len(l.limits))
	}
	r := Request{Session: d.session, User: d.user}
	var k *calledKey // made only with limits for one tool: its zeroing costs
	if l.toolKeys != nil {
		k = new(calledKey)
	}
	for i := range l.limits {
		lim := &l.limits[i]
		if !l.applies(i, d.tool, k) {
			continue
		}
		var n float64
		switch lim.Kind {
		case Rate:
			n = float64(d.calls)
		case Spend:
			n = d.cost
		}
		if n == 0 {
			continue
		}
		cs = cs[:len(cs)+1]
		c := &cs[len(cs)-1]
		c.lim, c.key, c.n, c.tat = &l.mem[i], r.key(lim.Scope), n, d.at
	}
	if len(cs) > 0 {
		l.memStore.apply(l.memStore.nanos(now), cs, opRefund, nil)
	}
}
