package limitertest

import (
	"fmt"
	"testing"

	"github.com/mcpguard/mcpguard/limiter"
)

// needLeases skips the test unless s leases its slots.
func needLeases(t *testing.T, s limiter.Store) {
	t.Helper()
	if ls, ok := s.(limiter.LeaseStore); !ok || !ls.LeasesSlots() {
		t.Skipf("%T counts its slots (it is not a limiter.LeaseStore whose LeasesSlots reports true)", s)
	}
}

// testReleaseTwice checks, for a store whose slots are leases, that a
// second release of a Decision frees nothing: not the slot of the call
// that took it after the first release, under any scope, whether it comes
// right after the first release or after many releases of other leases (a
// store that remembers only its last few releases frees a slot then).
func testReleaseTwice(t *testing.T, s limiter.Store) {
	needLeases(t, s)
	l := newLimiter(t, s,
		limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.Session, Max: 1},
		limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 2},
	)
	r := func(sess string) limiter.Request { return limiter.Request{Session: sess, Calls: 1} }
	a := allowAt(t, l, 0, r("rt-a"), allowed)
	l.Release(a)
	b := allowAt(t, l, 0, r("rt-a"), allowed)
	l.Release(a) // again: b's slot stays taken
	allowAt(t, l, 0, r("rt-a"), denied(limiter.Concurrency, limiter.Session, 0))
	c := allowAt(t, l, 0, r("rt-c"), allowed)
	allowAt(t, l, 0, r("rt-d"), denied(limiter.Concurrency, limiter.Global, 0))
	for _, d := range []limiter.Decision{b, b, c, c} {
		l.Release(d)
	}
	// Many other calls come and go; then every Decision above, and each
	// of theirs, is released again while h holds a slot.
	var gone []limiter.Decision
	for i := range 16 {
		d := allowAt(t, l, 0, r(fmt.Sprintf("rt-x%d", i)), allowed)
		l.Release(d)
		gone = append(gone, d)
	}
	h := allowAt(t, l, 0, r("rt-a"), allowed)
	for _, d := range append([]limiter.Decision{a, b, c}, gone...) {
		l.Release(d)
	}
	allowAt(t, l, 0, r("rt-a"), denied(limiter.Concurrency, limiter.Session, 0))
	g := allowAt(t, l, 0, r("rt-g"), allowed)
	allowAt(t, l, 0, r("rt-h"), denied(limiter.Concurrency, limiter.Global, 0))
	l.Release(h)
	l.Release(g)
	// Every slot is free again, and only those: two calls, not more.
	allowAt(t, l, 0, r("rt-e"), allowed)
	allowAt(t, l, 0, r("rt-f"), allowed)
	allowAt(t, l, 0, r("rt-g"), denied(limiter.Concurrency, limiter.Global, 0))
}
