package limiter

import (
	"context"
	"fmt"
	"math"
	"time"
)

// A Store keeps the state of the limits and makes the decisions: the
// in-memory [MemoryStore] for one process, or a shared store such as the
// Redis one in limiter/redislimit for many replicas. The package
// limiter/limitertest checks that a Store behaves as described here.
//
// Implementations must be safe for concurrent use. An Apply that panics
// (a store's bug) has failed, as with an error: the [Limiter] logs the
// panic to slog.Default at Error, with its stack, and treats the batch as
// one that could not be carried out.
type Store interface {
	// Apply carries out b at time now: it reserves the units of every
	// check or, when b.Release is set, frees the in-flight slots held
	// under b.Lease, or, when b.Refund is set (a [RefundStore] only), gives
	// back the units a reservation took. See [Batch] for the contract. A
	// store with its own clock (a Redis server's TIME) may use that instead
	// of now.
	//
	// Apply returns an error only when the batch could not be carried out
	// (the store is unreachable, ctx is done, the batch is not valid); then
	// it must not have changed any state, as far as it can tell.
	Apply(ctx context.Context, now time.Time, b *Batch) error
}

// StoreFunc adapts a function to a [Store].
type StoreFunc func(ctx context.Context, now time.Time, b *Batch) error

// Apply calls f(ctx, now, b).
func (f StoreFunc) Apply(ctx context.Context, now time.Time, b *Batch) error {
	return f(ctx, now, b)
}

// A Check is one limit applied to one key within a [Batch].
type Check struct {
	// ID identifies the limit ([Limit.ID]); IDs within one batch are
	// distinct.
	ID string
	// Key is the bucket within the limit: the session key, the user, or ""
	// for a global limit.
	Key string
	// Kind, Max and Window are those of the limit: a valid Kind, a Max
	// that is a positive finite number and, for Rate and Spend, a
	// positive Window no longer than [MaxWindow].
	Kind   Kind
	Max    float64
	Window time.Duration
	// N is the amount the call takes: calls for Rate, cost units for Spend
	// (both finite and greater than zero), one slot for Concurrency. A
	// built-in store returns an error for a batch holding a check outside
	// these bounds, and changes nothing.
	N float64
	// Peek makes the check a question: in a reservation it is evaluated
	// as any other (it can deny the batch, and counts for RetryAfter), but
	// an allowed batch takes nothing from it and makes no state for it.
	// The [Limiter] sets it on the Spend checks of a dry run
	// ([Request].DryRun), and sends such checks only to a [PeekStore]
	// whose Peeks reports true. Release and refund batches ignore it.
	Peek bool
}

// A LeaseStore is a [Store] whose in-flight slots are leases named by
// [Batch].Lease, so that it can free the slot of a reservation whose Apply
// failed on the caller's side (or whose answer broke the Batch contract)
// without touching any other: the [Limiter] then sends it an Abandon batch,
// as it does for a release whose Apply failed. Abandons are sent in the
// background and retried for about 13 seconds; a panic of Apply's there is
// logged to slog.Default at Error (with its value and stack) and ends that
// Abandon, not the process. A release of a Lease that holds no slot (one
// released already) frees nothing, so a second [Limiter.Release] of a
// Decision frees no other call's slot. The Redis store and the [MemoryStore] are LeaseStores.
type LeaseStore interface {
	Store
	// LeasesSlots reports that the store's slots are leases.
	LeasesSlots() bool
}

// A RefundStore is a [Store] that can give back what a reservation took
// from its Rate and Spend buckets, for a call that was allowed but never
// ran: [Limiter.Refund] sends it a batch with Refund set. Refunds are opt-in:
// the [Limiter] sends refund batches only to a RefundStore whose Refunds
// reports true, and a store that is not one keeps working unchanged (its
// Limiter's Refund returns an error that unwraps to [ErrRefundUnsupported]).
// The [MemoryStore] and the Redis store in limiter/redislimit are
// RefundStores.
type RefundStore interface {
	Store
	// Refunds reports that the store carries out Refund batches as
	// [Batch] describes.
	Refunds() bool
}

// A PeekStore is a [Store] that carries out [Check].Peek: it evaluates a
// Peek check with the others of its batch, at the same instant and under
// the same atomicity, and takes nothing from it. Peeking is opt-in: the
// [Limiter] sends Peek checks (the cost of a dry run, [Request].DryRun)
// only to a PeekStore whose Peeks reports true, and leaves them out for
// any other store, which would take them. The [MemoryStore] and the Redis
// store in limiter/redislimit are PeekStores.
type PeekStore interface {
	Store
	// Peeks reports that the store carries out Peek checks as [Check]
	// describes.
	Peeks() bool
}

// A Batch is one atomic operation on a [Store].
//
// When Release is false, the store reserves: it evaluates every check
// against the state at one instant and, only if all of them allow the call,
// takes N units from every Rate and Spend bucket (GCRA, see [Limit]) and one
// in-flight slot under Lease from every Concurrency check, except from a
// Peek check (a [PeekStore] only), which is evaluated with the others but
// takes nothing. A batch that is denied changes nothing. The store
// reports the outcome in Denied and RetryAfter.
//
// When Release is true, the store frees the in-flight slots that Lease holds
// under the (Concurrency) checks, if it still holds them, and reports
// nothing (a store that counts slots rather than leasing them frees one
// slot per check whichever reservation took it; the [MemoryStore], which
// leases, does so too for a check its lease took no slot under, so a
// release must list the Concurrency checks, not Peek, of its reservation,
// as the [Limiter]'s do). With Abandon too, the
// reservation of Lease failed on the caller's side (its Apply returned an
// error, a timeout say) although it may have been carried out, or may still
// arrive, or its release failed: the store frees what it took and, if it
// can, makes sure that a reservation of Lease arriving later takes nothing.
//
// When Refund is true (and Release false), the store gives back what an
// allowed reservation of the same Rate and Spend checks took, for a call
// that never ran: for every Rate and Spend check it moves the bucket's
// theoretical arrival time (TAT) back by the increment a reservation of N
// units adds (Window*N/Max, rounded exactly as for the reservation), less
// Elapsed, the time since the reservation, and not at all when that leaves
// nothing: during Elapsed the bucket may have been full without the
// reservation, its refill lost, and the refill of a full bucket drawn on by
// other calls, which a refund must not give back. A TAT that
// ends at or before now is a full bucket, which the store may keep or
// drop. A bucket already full at now, or a key the store does not have
// (evicted or expired: full), is left as it is, so a refund never fills a
// bucket past Max and never creates state. A refund right after the
// reservation thus restores exactly the state before it, and a later one
// never gives back units other calls took. Concurrency checks are
// ignored: a refund frees no slot (a release does). A refund is not
// idempotent: every refund batch gives back its units again, whether or not
// they were refunded before. It is never denied and reports nothing. Its
// Lease numbers the refund, unique as a reservation's is, so that a store
// whose client may send a request twice (after a lost reply) can carry the
// refund out once; a store may ignore it.
type Batch struct {
	// Release selects a release instead of a reservation.
	Release bool
	// Refund selects a refund instead of a reservation (only with Release
	// false: a batch with both is not valid, and a store returns an error
	// for it and changes nothing). The [Limiter] sends it only to a
	// [RefundStore] whose Refunds reports true.
	Refund bool
	// Elapsed is, for a refund, the time since the reservation it undoes,
	// on the [Limiter]'s clock (see Refund above); zero otherwise.
	Elapsed time.Duration
	// Abandon marks a release of a reservation whose outcome the caller
	// never learned, or the retry of a release that failed (only with
	// Release). The [Limiter] sends it only to a
	// [LeaseStore]; a store that counts slots must ignore it (it cannot
	// tell whether the failed reservation took one).
	Abandon bool
	// Lease identifies the in-flight slots of one decision, or one refund;
	// unique within the [Limiter] that made it. A store shared by several
	// processes makes it unique across them. Zero is no lease: the
	// [MemoryStore] counts such slots, and the Redis store refuses a
	// reservation or release with a Concurrency check (not a Peek) and no
	// Lease. The Limiter gives a Lease to every reservation that takes a
	// slot.
	Lease uint64
	// Checks are the limits that apply to the call.
	Checks []Check

	// Denied is set by the store for a reservation: the index in Checks of
	// the check that denied the call, or -1 when it was allowed. The
	// [Limiter] takes any other value as a failure of the store: the call
	// is denied, whatever the fail-open options, and a [LeaseStore] is
	// sent an Abandon of the reservation's Lease. When
	// several checks deny, it is the Rate or Spend check with the longest
	// wait, or a check that can never allow the call, or else a Concurrency
	// check.
	Denied int
	// RetryAfter is set by the store on denial: how long from now until
	// every Rate and Spend check would allow the call if nothing else took
	// units meanwhile (the longest such wait). It is negative when waiting
	// cannot help because the denying check's N exceeds its Max, and zero
	// when only Concurrency checks denied. The [Limiter] takes a denial by
	// a Rate or Spend check that says otherwise (zero, negative for an N
	// within Max, positive for one above) as a failure of the store, as
	// it does a Denied out of range.
	RetryAfter time.Duration
}

// Valid returns an error for a check outside the Check contract (see its
// fields): an invalid Kind, a Max or N that is not a positive finite
// number, a Rate or Spend Window that is not positive or is longer than
// [MaxWindow]. A store would otherwise decide such a check as some limit,
// or as none (a negative Max or a NaN N allows every call; on a window of
// centuries a bucket's time passes the year 2262, where int64 nanoseconds
// wrap); the built-in stores refuse a batch that holds one. The Limiter
// never sends one.
func (c *Check) Valid() error {
	switch c.Kind {
	case Rate, Spend:
		if c.Window <= 0 {
			return fmt.Errorf("window %v is not positive", c.Window)
		}
		if c.Window > MaxWindow {
			return fmt.Errorf("window %v is longer than %v", c.Window, MaxWindow)
		}
	case Concurrency:
	default:
		return fmt.Errorf("invalid kind %v", c.Kind)
	}
	if !(c.Max > 0) || math.IsInf(c.Max, 1) {
		return fmt.Errorf("max %v is not a positive finite number", c.Max)
	}
	if !(c.N > 0) || math.IsInf(c.N, 1) {
		return fmt.Errorf("n %v is not a positive finite number", c.N)
	}
	return nil
}
