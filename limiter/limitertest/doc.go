// Package limitertest is a conformance kit for implementations of
// [limiter.Store]: [Run] checks, through a [limiter.Limiter], that a store
// decides exactly and atomically, under concurrency, across scopes, with
// exact retry-after delays, fractional costs, in-flight slots and refill;
// that distinct keys (empty, long, differing by a separator, case or Unicode
// form) are distinct buckets, that costs at the edges of float64 neither
// overflow into a denial nor come free, that a burst of exactly Max fits on
// windows of months and years, that a call at an earlier time than the last
// gets nothing extra, and that a limit for one tool charges and releases the
// calls of every spelling of its name as one budget; for a store whose slots
// are leases ([limiter.LeaseStore]), that a second release of a decision
// frees no other call's slot; for a store that refunds
// ([limiter.RefundStore]), that a refund gives back exactly what a decision
// took, and only that; and, for a store that peeks ([limiter.PeekStore]),
// that a dry run is denied exactly as the real call would be and takes no
// cost, not even for a moment that a concurrent real call could see.
//
// The kit passes explicit times to the limiter, so the store under test must
// decide at the time it is given (a Redis store in its client-time mode, for
// instance); a store's own clock is for its own tests.
package limitertest
