package limiter

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpguard/mcpguard/internal/gaveup"
	"github.com/mcpguard/mcpguard/internal/logsafe"
	"github.com/mcpguard/mcpguard/internal/namekey"
)

// Errors reported by the limiter. Returned errors unwrap to them.
var (
	// ErrInvalidCost reports a negative, NaN or infinite cost.
	ErrInvalidCost = errors.New("limiter: invalid cost")
	// ErrInvalidRequest reports a [Request] that cannot be decided, such as
	// a negative number of calls.
	ErrInvalidRequest = errors.New("limiter: invalid request")
	// ErrStoreUnavailable reports a [Store] that could not decide (Redis
	// unreachable or too slow, for instance).
	ErrStoreUnavailable = errors.New("limiter: store unavailable")
	// ErrRefundUnsupported reports a [Limiter.Refund] on a store that does
	// not refund (it is not a [RefundStore] whose Refunds reports true).
	ErrRefundUnsupported = errors.New("limiter: store cannot refund")
)

// maxLimits is the most limits a Limiter takes (the bits of Decision.held).
const maxLimits = 64

// Options configures a [Limiter]. The zero value, or a nil *Options, gives
// an in-memory store that fails closed.
//
// The fail-open options are for a store that is down or too slow, not for
// a caller that gave up: when the context passed to [Limiter.AllowAt] is
// done (cancelled, or its deadline passed) before a store other than the
// [MemoryStore] has decided, the call is denied whatever they say, so that
// a client cannot pass the limits by disconnecting as soon as it has sent
// a call. A context done already is not sent to the store at all. (The
// MemoryStore decides at once and ignores the context.) The audit records
// of mcpguard's guard and gateway say of a call admitted so that it ran
// without its caps (audit.DetailFailOpen).
type Options struct {
	// Store keeps the state. nil means a new [MemoryStore].
	Store Store
	// FailOpenReads allows read calls (Request.Write false) when the store
	// fails, unless the caller's context is done. false denies them: the
	// limiter fails closed.
	FailOpenReads bool
	// FailOpenWrites allows write calls when the store fails, unless the
	// caller's context is done. false, the default and the advice, denies
	// them.
	FailOpenWrites bool
}

// A Request describes one tool call to [Limiter.AllowAt].
type Request struct {
	// Session is the key of the caller's session: its id, or any other
	// string standing for it. Session limits use it. An empty Session is a
	// key like any other: all requests without one share one budget.
	Session string
	// User is the authenticated user or subject. User limits use it; an
	// empty User is a key like any other.
	User string
	// Tool is the name of the tool called; limits for another tool do not
	// apply. A limit for a tool applies to every spelling of its name that
	// the policy takes for it (case folding: see [Limit].Tool).
	Tool string
	// Write says whether the tool is a write, for the fail-open policy.
	Write bool
	// Calls is how many calls this request counts against Rate limits:
	// 1 for a call, 0 for the retry of a logical call already counted (a
	// multi round-trip confirmation). Must not be negative.
	Calls int
	// Cost is how many cost units this request counts against Spend
	// limits (or, with DryRun, is checked against them). It must pass
	// [CheckCost].
	Cost float64
	// DryRun makes Cost a question rather than a charge, for the preview
	// of a call: the request is allowed only if Cost fits in every Spend
	// limit that applies, decided exactly as for a real call at the same
	// instant (the same denying limit and RetryAfter), but it takes none
	// of it. Its Calls and in-flight slots are taken as usual. Nothing is
	// taken and given back: a dry run never makes another call wait or be
	// denied beyond what its Calls and slots take. The answer is only as
	// good as the moment it was made: another call may take the room
	// before the real one comes. On a store that is not a [PeekStore]
	// whose Peeks reports true, the cost of a dry run is not sent at all
	// (the store would take it): such a request is decided on its calls
	// and slots alone.
	DryRun bool
}

// A Decision is the outcome of [Limiter.AllowAt]. When Allowed, the call
// holds an in-flight slot under every Concurrency limit that applies, until
// it is handed back to [Limiter.Release]. An allowed Decision also
// remembers the calls and cost it took from the Rate and Spend limits, so
// that [Limiter.Refund] can give them back should the call be refused
// before it runs. A Decision is a small value; it holds no allocation.
type Decision struct {
	// Allowed says whether the call may proceed.
	Allowed bool
	// Limit is the limit that denied the call (its Kind, Scope and so on),
	// or the zero Limit when the call was allowed or the decision failed.
	Limit Limit
	// RetryAfter is, for a denial by a Rate or Spend limit, how long to wait
	// before the same call would be allowed if nothing else consumed in the
	// meantime: a retry after RetryAfter succeeds. It is zero when waiting
	// alone cannot help: a denial by a Concurrency limit (retry when a call
	// in flight ends), or a call costing more than the denying limit's Max.
	RetryAfter time.Duration
	// Err is non-nil when the decision could not be made as asked: an
	// invalid request (unwraps to [ErrInvalidCost] or [ErrInvalidRequest];
	// never allowed), or a store failure (unwraps to [ErrStoreUnavailable];
	// Allowed then follows the fail-open options, but is false when
	// AllowAt's ctx is done, and then Err unwraps to ctx's error too, or
	// when the store gave an answer outside the [Batch] contract).
	Err error

	session, user, tool string
	calls               int     // Request.Calls taken, if allowed by the store
	cost                float64 // Request.Cost taken, if allowed by the store
	lease               uint64
	held                uint64 // bit i: holds a slot of limits[i]
	at                  int64  // AllowAt's now on the store's or the Limiter's clock (for Refund)
	atKind              uint8  // what at holds, on a store other than the memory one (see Limiter.stamp)
}

// A Limiter applies a set of limits to tool calls. It is safe for
// concurrent use. The zero Limiter, and a nil one, has no limits and allows
// every call: make one with [New].
type Limiter struct {
	limits    []Limit
	ids       []string
	store     Store
	memStore  *MemoryStore // store, when it is the in-memory one
	mem       []memLimit   // limits as memStore needs them
	failOpenR bool
	failOpenW bool
	lease     atomic.Uint64
	abandons  chan struct{} // a token per abandon running; nil: the store leases no slots
	pendMu    sync.Mutex    // guards pending, and taking or giving back a token of abandons
	pending   []abandonJob  // abandons waiting for a token (see startAbandon)
	refunds   bool          // the store carries out Refund batches
	peeks     bool          // the store carries out Peek checks
	clock     clock         // for Decision.at on a store other than memStore
	toolKeys  []string      // the name key of each limit's Tool (see applies)
	maxKey    int           // the length of the longest of toolKeys
}

// maxAbandons bounds the abandons a Limiter runs at once: when a store is
// down, every failed reservation and release would start one. Past it,
// they wait, up to maxPending of them, for a running abandon to end, which
// then carries them out: a stall of the store under traffic times out more
// reservations than maxAbandons, all of which it may carry out once it
// catches up, and the slots of those not abandoned would be held for
// their whole lease. Past maxPending waiting, the slots of a failed
// reservation or release come back when their lease expires.
const maxAbandons = 64

// maxPending bounds the abandons waiting for one of the maxAbandons.
const maxPending = 4096

// An abandonJob is an abandon to carry out (see abandon): of lease,
// holding the slots held of r's limits, decided (or released) at now,
// and started at since.
type abandonJob struct {
	r           Request
	held, lease uint64
	now, since  time.Time
}

// abandonTries is how many times an abandon is tried: the pauses between
// them double from 50ms, so the last comes 12.75s after the first.
const abandonTries = 9

// New returns a Limiter applying limits, with options opts (nil means
// defaults). It returns an error if a limit is invalid, two limits have the
// same [Limit.ID], there are more than 64 limits, or the store is a
// [MemoryStore] not made by [NewMemoryStore].
func New(limits []Limit, opts *Options) (*Limiter, error) {
	if opts == nil {
		opts = &Options{}
	}
	if len(limits) > maxLimits {
		return nil, fmt.Errorf("limiter: %d limits, at most %d", len(limits), maxLimits)
	}
	l := &Limiter{
		limits:    append([]Limit(nil), limits...),
		ids:       make([]string, len(limits)),
		store:     opts.Store,
		failOpenR: opts.FailOpenReads,
		failOpenW: opts.FailOpenWrites,
		clock:     newClock(),
	}
	seen := make(map[string]int, len(limits))
	for i, lim := range l.limits {
		if err := lim.validate(); err != nil {
			return nil, fmt.Errorf("limiter: limit %d (%v): %v", i, lim, err)
		}
		id := lim.ID()
		if j, ok := seen[id]; ok {
			return nil, fmt.Errorf("limiter: limits %d and %d have the same kind, scope, window and tool", j, i)
		}
		seen[id] = i
		l.ids[i] = id
		if lim.Tool != "" {
			if l.toolKeys == nil {
				l.toolKeys = make([]string, len(l.limits))
			}
			l.toolKeys[i] = namekey.Of(lim.Tool)
			l.maxKey = max(l.maxKey, len(l.toolKeys[i]))
		}
	}
	if l.store == nil {
		l.store = NewMemoryStore()
	}
	if ms, ok := l.store.(*MemoryStore); ok {
		if !ms.made() {
			return nil, errUnmadeStore
		}
		l.memStore = ms
		l.mem = make([]memLimit, len(l.limits))
		for i, lim := range l.limits {
			l.mem[i] = memLimit{id: l.ids[i], kind: lim.Kind, max: lim.Max, window: int64(lim.Window)}
		}
	}
	if ls, ok := l.store.(LeaseStore); ok && ls.LeasesSlots() {
		l.abandons = make(chan struct{}, maxAbandons)
	}
	if rs, ok := l.store.(RefundStore); ok && rs.Refunds() {
		l.refunds = true
	}
	if ps, ok := l.store.(PeekStore); ok && ps.Peeks() {
		l.peeks = true
	}
	var seed [8]byte
	rand.Read(seed[:])
	l.lease.Store(binary.LittleEndian.Uint64(seed[:]))
	return l, nil
}

// Limits returns a copy of the limits l applies.
func (l *Limiter) Limits() []Limit {
	if l == nil {
		return nil
	}
	return append([]Limit(nil), l.limits...)
}

// AllowAt decides whether the call r made at time now may proceed, and if
// so takes its calls, cost and in-flight slots from every applicable limit
// at once. A denied call takes nothing from any limit. A dry run
// ([Request].DryRun) takes no cost: its cost is checked against the Spend
// limits (by a [PeekStore]; see Request). Stores with their own clock
// (Redis) decide at their own time rather than now. ctx bounds the store's
// work (a nil ctx is taken as [context.Background]); the in-memory store
// does not read it.
//
// Every allowed Decision must be passed to [Limiter.Release] exactly once
// when the call ends, on every way out (use defer); a Decision that holds
// no slot may be released too, at no cost. An allowed call that is refused
// before it runs may give its calls and cost back with [Limiter.Refund].
func (l *Limiter) AllowAt(ctx context.Context, now time.Time, r Request) Decision {
	if err := CheckCost(r.Cost); err != nil {
		return Decision{Err: err}
	}
	if r.Calls < 0 {
		return Decision{Err: fmt.Errorf("%w: %d calls", ErrInvalidRequest, r.Calls)}
	}
	if l == nil {
		return Decision{Allowed: true} // as the zero Limiter: no limits
	}
	if l.memStore == nil {
		return l.allowStore(ctx, now, r)
	}
	// The in-memory decision, here rather than in a function of its own,
	// whose Decision AllowAt would copy.
	var buf [stackChecks]memCheck
	cs := buf[:0]
	if len(l.limits) > stackChecks {
		cs = make([]memCheck, 0, len(l.limits))
	}
	var held uint64
	var k *calledKey // made only with limits for one tool: its zeroing costs
	if l.toolKeys != nil {
		k = new(calledKey)
	}
	for i := range l.limits {
		lim := &l.limits[i]
		if !l.applies(i, r.Tool, k) {
			continue
		}
		n, peek := 1.0, false
		switch lim.Kind {
		case Rate:
			n = float64(r.Calls)
		case Spend:
			n, peek = r.Cost, r.DryRun
		case Concurrency:
			held |= 1 << i
		}
		if n == 0 {
			continue
		}
		cs = cs[:len(cs)+1]
		c := &cs[len(cs)-1]
		c.lim, c.key, c.n, c.index, c.peek = &l.mem[i], r.key(lim.Scope), n, uint8(i), peek
	}
	var lease uint64
	var lp *uint64
	if held != 0 {
		lp = &lease
	}
	at := l.memStore.nanos(now)
	denied, wait := l.memStore.apply(at, cs, opReserve, lp)
	if denied < 0 {
		return Decision{Allowed: true, session: r.Session, user: r.User, tool: r.Tool, calls: r.Calls, cost: r.taken(), lease: lease, held: held, at: at}
	}
	return Decision{Limit: l.limits[cs[denied].index], RetryAfter: max(wait, 0)}
}

func (l *Limiter) releaseMemory(d *Decision) {
	var buf [stackChecks]memCheck
	cs := buf[:0]
	if len(l.limits) > stackChecks {
		cs = make([]memCheck, 0, len(l.limits))
	}
	r := Request{Session: d.session, User: d.user}
	for i := range l.limits {
		if d.held&(1<<i) != 0 {
			cs = cs[:len(cs)+1]
			c := &cs[len(cs)-1]
			c.lim, c.key = &l.mem[i], r.key(l.limits[i].Scope)
		}
	}
	l.memStore.apply(0, cs, opRelease, &d.lease)
}

// applies reports whether limit i applies to a call of tool: a limit for
// every tool does, and a limit for one tool does when tool is its Tool or
// another spelling of it under the policy's name matching (case folding,
// see policy.NameKey), so that a downstream server lenient with the case
// of names is not called under a spelling that escapes the tool's limit.
// k is tool's key, made by the first limit for another name that needs it:
// a decision makes it once, not once per limit (nil when no limit names
// a tool).
func (l *Limiter) applies(i int, tool string, k *calledKey) bool {
	t := l.limits[i].Tool
	if t == "" || t == tool {
		return true
	}
	if !k.made {
		// Cut once longer than every limit's key (it then differs from
		// each), or than k.buf holds.
		k.n, k.made = len(namekey.Append(k.buf[:0], tool, min(l.maxKey, keyCut))), true
	}
	want := l.toolKeys[i]
	if k.n <= keyCut || len(want) <= keyCut {
		// k.buf holds tool's whole key, or more of it than want is long.
		return string(k.buf[:k.n]) == want
	}
	// Both are longer than k.buf holds: made again, on the heap.
	return string(namekey.Append(make([]byte, 0, len(want)+8), tool, len(want))) == want
}

// keyCut is the longest key a calledKey holds whole: namekey.Append goes
// less than 8 bytes past its limit.
const keyCut = namekey.BufSize - 8

// A calledKey is the name key of the tool a decision is for, in buf[:n]
// once made (see Limiter.applies).
type calledKey struct {
	made bool
	n    int
	buf  [namekey.BufSize]byte
}

// taken returns the cost r takes if allowed: none for a dry run.
func (r *Request) taken() float64 {
	if r.DryRun {
		return 0
	}
	return r.Cost
}

// key returns the bucket key of r within a limit of scope s.
func (r *Request) key(s Scope) string {
	switch s {
	case Session:
		return r.Session
	case User:
		return r.User
	}
	return ""
}

func (l *Limiter) allowStore(ctx context.Context, now time.Time, r Request) Decision {
	if ctx == nil {
		ctx = context.Background()
	}
	checks, held := l.build(make([]Check, 0, len(l.limits)), r, opReserve, 0)
	if len(checks) == 0 {
		return Decision{Allowed: true}
	}
	if err := gaveup.Err(ctx); err != nil {
		// The caller gave up: nothing to ask, nothing to abandon, and no
		// fail-open (see Options).
		return Decision{Err: fmt.Errorf("%w: %w", ErrStoreUnavailable, err)}
	}
	b := &Batch{Checks: checks}
	var lease uint64
	if held != 0 {
		lease = l.lease.Add(1)
		b.Lease = lease
	}
	if err := l.apply(ctx, now, b); err != nil {
		// The reservation may have been carried out, or may still
		// arrive, with slots nobody would release.
		l.startAbandon(r, held, lease, now)
		allow := l.failOpenR
		if r.Write {
			allow = l.failOpenW
		}
		err = fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
		if cerr := gaveup.Err(ctx); cerr != nil {
			// The caller gave up (cancelled, or its deadline passed):
			// fail-open is for a store that is down, not a way around
			// the limits for a client that disconnects.
			allow = false
			if !errors.Is(err, cerr) {
				err = fmt.Errorf("%w: %w", err, cerr)
			}
		}
		return Decision{Allowed: allow, Err: err}
	}
	d := l.decision(b, r, held, lease)
	if d.Err != nil {
		// An answer outside the contract: what the store did with the
		// reservation, its slots included, is not known.
		l.startAbandon(r, held, lease, now)
	}
	d.at, d.atKind = l.stamp(now)
	return d
}

// startAbandon abandons lease in the background (see abandon), when the
// store leases slots and the decision holds one; past maxAbandons running,
// it waits for one of them to end (past maxPending waiting, the lease is
// left to expire).
func (l *Limiter) startAbandon(r Request, held, lease uint64, now time.Time) {
	if lease == 0 || l.abandons == nil {
		return
	}
	j := abandonJob{r: r, held: held, lease: lease, now: now, since: time.Now()}
	l.pendMu.Lock()
	defer l.pendMu.Unlock()
	select {
	case l.abandons <- struct{}{}:
		go l.abandon(j)
	default: // too many running: the next to end carries it out
		if len(l.pending) < maxPending {
			l.pending = append(l.pending, j)
		}
	}
}

// abandon releases, in the background, the in-flight slots that a
// reservation whose Apply failed (or answered outside the [Batch]
// contract) may have taken, telling the store to make a late arrival of it
// take nothing; or those of a release whose Apply failed.
// It tries nine times, with pauses doubling from 50ms, the last try about
// 13 seconds after the first, then leaves the slots to the expiry of their
// lease. Its clock is the decision's now (the
// release's, for a release), moved on by the time since, so that a store
// told the caller's time measures the lease as the reservation did.
// A store whose Apply panics here (on its own goroutine, where the panic
// would end the process, not reach a caller) is tried no more: the panic
// is logged to [slog.Default] at Error, with its value and stack, and the
// slots are left to the expiry of their lease. It holds a token of
// l.abandons, and carries out the abandons waiting for one before it gives
// the token back.
func (l *Limiter) abandon(j abandonJob) {
	for {
		l.abandonOne(j)
		l.pendMu.Lock()
		if len(l.pending) == 0 {
			l.pending = nil
			<-l.abandons
			l.pendMu.Unlock()
			return
		}
		j = l.pending[0]
		l.pending[0] = abandonJob{}
		l.pending = l.pending[1:]
		l.pendMu.Unlock()
	}
}

// abandonOne tries j, as abandon describes.
func (l *Limiter) abandonOne(j abandonJob) {
	checks, _ := l.build(make([]Check, 0, len(l.limits)), j.r, opRelease, j.held)
	wait := 50 * time.Millisecond
	for i := range abandonTries {
		b := &Batch{Release: true, Abandon: true, Lease: j.lease, Checks: checks}
		if panicked, err := l.applyAlone(j.now.Add(time.Since(j.since)), b); err == nil || panicked ||
			i == abandonTries-1 {
			// No pause after the last try: it would only hold a place
			// among the maxAbandons.
			return
		}
		time.Sleep(wait)
		wait *= 2
	}
}

// applyAlone is the store's Apply of b by abandon; it reports and recovers
// a panic of the store's.
func (l *Limiter) applyAlone(now time.Time, b *Batch) (panicked bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			logsafe.Logger(slog.Default()).Error("limiter: the store panicked while abandoning a lease; its slots are left to the lease's expiry",
				"lease", b.Lease, "panic", logsafe.PanicText(v), "stack", string(debug.Stack()))
			panicked = true
		}
	}()
	return false, l.store.Apply(context.Background(), now, b)
}

// apply is the store's Apply of b on a caller's goroutine. A panic of
// the store's (its bug) is the batch failing, as an error would be: logged
// to slog.Default at Error with its value and stack, and returned as an
// error. Unrecovered, it reached the caller as a panic of its own (a
// guard answered it as its tool's), and a reservation it interrupted,
// which the store may have carried out, was never abandoned: its slots
// were held for good.
func (l *Limiter) apply(ctx context.Context, now time.Time, b *Batch) (err error) {
	defer func() {
		if v := recover(); v != nil {
			logsafe.Logger(slog.Default()).Error("limiter: the store panicked", "lease", b.Lease, "panic", logsafe.PanicText(v), "stack", string(debug.Stack()))
			err = errStorePanicked
		}
	}()
	return l.store.Apply(ctx, now, b)
}

// errStorePanicked is the failure of a batch whose store's Apply panicked.
var errStorePanicked = errors.New("the store panicked")

// build appends to dst the checks of the limits that apply to r for o (for
// a release, only the concurrency ones in held; for a refund, only the rate
// and spend ones) and returns them with the set of concurrency limits among
// them. The spend checks of a dry run's reservation are Peek checks, or
// left out when the store does not peek.
func (l *Limiter) build(dst []Check, r Request, o op, held uint64) ([]Check, uint64) {
	var conc uint64
	var k *calledKey // made only with limits for one tool: its zeroing costs
	if l.toolKeys != nil {
		k = new(calledKey)
	}
	for i := range l.limits {
		lim := &l.limits[i]
		if !l.applies(i, r.Tool, k) {
			continue
		}
		c := Check{ID: l.ids[i], Kind: lim.Kind, Max: lim.Max, Window: lim.Window}
		switch lim.Kind {
		case Rate:
			c.N = float64(r.Calls)
		case Spend:
			c.N = r.Cost
			if r.DryRun && o == opReserve {
				c.Peek = true
				if !l.peeks {
					continue
				}
			}
		case Concurrency:
			c.N = 1
		}
		if c.N == 0 ||
			o == opRelease && (lim.Kind != Concurrency || held&(1<<i) == 0) ||
			o == opRefund && lim.Kind == Concurrency {
			continue
		}
		switch lim.Scope {
		case Session:
			c.Key = r.Session
		case User:
			c.Key = r.User
		}
		if lim.Kind == Concurrency {
			conc |= 1 << i
		}
		dst = append(dst, c)
	}
	return dst, conc
}

func (l *Limiter) decision(b *Batch, r Request, held, lease uint64) Decision {
	if b.Denied < -1 || b.Denied >= len(b.Checks) {
		// Not an answer the contract defines: nothing is known to be
		// allowed.
		return Decision{Err: fmt.Errorf("%w: store reported check %d of %d", ErrStoreUnavailable, b.Denied, len(b.Checks))}
	}
	if b.Denied == -1 {
		return Decision{Allowed: true, session: r.Session, user: r.User, tool: r.Tool, calls: r.Calls, cost: r.taken(), lease: lease, held: held}
	}
	if c := &b.Checks[b.Denied]; c.Kind != Concurrency && (b.RetryAfter == 0 || (c.N > c.Max) != (b.RetryAfter < 0)) {
		// A Rate or Spend denial says how long to wait, or that no wait
		// helps (negative) exactly when N is above Max. A wait of zero
		// ("now"), a "never" for a call the limit holds, or a wait for
		// one it can never hold would tell the caller that a retry is
		// hopeless, or worth it, when it is not.
		return Decision{Err: fmt.Errorf("%w: store denied check %d (%v of %v) with a wait of %v", ErrStoreUnavailable, b.Denied, c.N, c.Max, b.RetryAfter)}
	}
	d := Decision{RetryAfter: max(b.RetryAfter, 0)}
	id := b.Checks[b.Denied].ID
	for i := range l.ids {
		if l.ids[i] == id {
			d.Limit = l.limits[i]
			break
		}
	}
	return d
}

// Release frees the in-flight slots d holds; d must come from l. Call it
// exactly once for every allowed Decision, whether the call returned, failed, panicked or was
// cancelled, and whether or not d was refunded ([Limiter.Refund] frees no
// slot, and Release gives back no calls or cost); releasing a Decision that
// holds no slot does nothing. A second Release of the same Decision (an
// early Release besides a deferred one, say) frees nothing on a store whose
// slots are leases ([LeaseStore]: the memory and Redis stores), and frees a
// slot another call holds on a store that counts slots.
// Release does not depend on any request context: a store that needs one
// gets a fresh context and bounds the wait itself. If a store whose slots
// are leases ([LeaseStore], such as the Redis one) cannot be reached, the
// release is sent again in the background, as an abandon (see [Batch]), for
// about 13 seconds; past that, the slots come back when their lease
// expires.
func (l *Limiter) Release(d Decision) {
	if d.held == 0 {
		return
	}
	if l.memStore != nil {
		l.releaseMemory(&d)
		return
	}
	r := Request{Session: d.session, User: d.user, Tool: d.tool}
	checks, _ := l.build(make([]Check, 0, len(l.limits)), r, opRelease, d.held)
	b := &Batch{Release: true, Lease: d.lease, Checks: checks}
	now := time.Now()
	if l.apply(context.Background(), now, b) != nil {
		// Leases make a retry safe: it frees d's slots and no other's.
		l.startAbandon(r, d.held, d.lease, now)
	}
}
