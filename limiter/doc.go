// Package limiter caps tool calls: how many calls per window (rate), how many
// cost units per window (spend) and how many calls at once (concurrency),
// per session, per user and globally, optionally for one tool only.
//
// A [Limiter] holds a list of [Limit] values. For each call the caller (the
// guard pipeline, after argument validation) asks [Limiter.AllowAt] with a
// [Request]: the session key, the user, the tool, whether it is a write, how
// many calls it counts (0 for the verified retry of a multi round-trip call,
// which was counted once already), what it costs (see [CheckCost]) and
// whether it is a dry run. Every limit that applies is checked and, only if
// all allow the call, charged, atomically: a call denied by any limit takes
// nothing from any limit. The [Decision] says which limit denied and how long to wait
// ([Decision.RetryAfter], exact: a retry after that delay succeeds if nothing
// else consumed meanwhile). An allowed call holds in-flight slots until
// [Limiter.Release], which the caller defers so that the slots come back on
// every way out: return, error, panic or cancellation.
//
// # Refunds
//
// A call can still be refused after it was allowed and charged, before its
// handler runs: a write whose audit record cannot be made, a confirmation
// already used. [Limiter.Refund] gives back the calls and cost such a
// Decision took, so that a call that never ran consumes nothing and its
// retry is not refused for a budget it never used. Each Rate and Spend
// bucket moves back by what the reservation moved it forward (Window × N /
// Max) less the time since the decision, never past full: a refund right
// after the decision restores the state before it, and a later one gives
// back less, or nothing, since meanwhile the bucket may have lost refill or
// been drawn on by other calls, whose units are never given back
// ([Limiter.Kept] tells what stays taken). A refund
// frees no in-flight slot (Release still does, exactly once), and it is
// not idempotent: refund a Decision at most once. Refunds are opt-in for
// stores (a [RefundStore]); both built-in stores refund, and on another
// store Refund returns an error that unwraps to [ErrRefundUnsupported].
//
// # Dry runs
//
// The preview of a call ([Request].DryRun) should meet the refusal the real
// call would meet, without spending. Its cost is checked against the Spend
// limits in the same atomic decision as everything else, exactly as the
// real call's would be (the same denying limit and RetryAfter), but not
// taken; its calls and in-flight slots are taken as usual. Nothing is taken
// and given back, so a dry run never makes a concurrent call wait or fail
// for a cost it held for a moment. Its answer may be stale at once: another
// call may take the room before the real call is made. Peeking is opt-in
// for stores (a [PeekStore]); both built-in stores peek, and another store
// is sent no cost for a dry run at all, which is then decided on its calls
// and slots alone.
//
// # Semantics
//
// Rate and spend limits use GCRA, a token bucket measured in time: a bucket
// of Max units refilling continuously at Max per Window. A quiet key can take
// Max units at once; after that units come back at an even pace, and over
// any interval of length d at most Max + Max*d/Window units pass (up to the
// rounding of each call's time to the store's resolution: see [Limit]). Fixed
// windows, which let 2*Max through in an instant at a window edge, are not
// used. The state of one limit and key is one timestamp.
//
// # Stores
//
// State lives in a [Store]. The default [MemoryStore] is exact and cheap
// (no allocation for a key it knows) and evicts idle keys, so memory stays
// bounded however many sessions come and go. It measures times read from
// [time.Now] on the monotonic clock, so that a step of the wall clock
// neither locks the buckets out nor refills them (see [MemoryStore] for
// other times, and for a machine's sleep). Its in-flight slots, like the
// Redis store's, are leases ([LeaseStore]): a second Release of the same
// Decision frees nothing. The Redis store in
// limiter/redislimit shares limits across replicas: one Lua script, one
// round trip, decides all limits of a call at the Redis server's time.
// When a store fails, the limiter fails closed by default, per class of
// tool (read or write) as configured in [Options] (never open for a caller
// whose context is done), and reports the failure in [Decision.Err]. The
// package limiter/limitertest is a conformance kit for stores.
package limiter
