package limiter

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"sync"
	"time"
)

const (
	numShards = 256
	// minSweep is the size a shard must reach before it is swept.
	minSweep = 256
	// stackChecks is how many checks a decision handles without allocating.
	stackChecks = 8
)

// A MemoryStore is the in-memory [Store]: exact and cheap, for one process.
// It is the default store of a [Limiter].
//
// State is kept per limit and key in a sharded map. A key whose buckets have
// refilled completely and that holds no in-flight slot is idle: keeping it
// or dropping it makes no difference to any decision, so idle keys are
// evicted as the map grows: a shard of the map is swept whenever it has
// doubled since its last sweep and holds at least 256 entries. Memory thus
// stays under about twice the keys active within one window (and no more
// than 65,536 entries when few are active), however many distinct keys come
// and go.
//
// Decisions are made at the times callers pass, on the store's clock: a
// time read from [time.Now] in this process (one with a monotonic reading)
// counts as the time of the store's creation plus the monotonic time
// since, so that a step of the wall clock (an NTP correction, a manual
// change, a resumed virtual machine) neither locks out, when it goes back,
// every key used recently until the wall clock has caught up, nor refills
// every bucket, when it goes forward. A time without a monotonic reading
// (a test's clock, a time from t.Round(0), t.UTC() or a synctest bubble,
// or one far from the store's creation) counts as its wall time; after a
// step, the two kinds disagree by the step, so a store is best given one
// kind. On systems whose monotonic clock stops while the machine sleeps
// (Linux and macOS among them), time asleep does not count for readings of
// time.Now: buckets refill only for the time awake (as with
// golang.org/x/time/rate), so a day's budget spent before a night's sleep
// comes back that much later, and the Redis store (on its server's clock)
// disagrees after the sleep; the two kinds of time then disagree by the
// time asleep too. Times that go backwards by more than a little (between
// callers with skewed clocks) may see an idle key evicted early, which
// admits at most that skew's worth of extra units.
//
// In-flight slots are leases: a second release of the same [Decision] (or
// [Batch] Lease) frees nothing, as on Redis.
//
// A MemoryStore is safe for concurrent use. Its zero value is not usable
// ([New] and Apply refuse it with an error); call [NewMemoryStore].
type MemoryStore struct {
	seed   maphash.Seed
	clock  clock
	shards [numShards]shard
}

type shard struct {
	mu   sync.Mutex
	m    map[memKey]*memState
	next int // sweep when len(m) reaches next
	// leases are the leases holding slots whose low byte is this shard's
	// index, and 0, which names no lease (a Lease of zero is none): a Go
	// map draws a new hash seed, at some cost, whenever a delete empties
	// it. nextLease numbers the leases the shard makes; leasePeak is the
	// most leases held since the map was last made.
	leases    map[uint64]struct{}
	nextLease uint64
	leasePeak int
	_         [16]byte
}

type memKey struct{ id, key string }

type memState struct {
	tat      int64 // GCRA theoretical arrival time, Unix nanoseconds
	inflight int64
}

// NewMemoryStore returns an empty [MemoryStore].
func NewMemoryStore() *MemoryStore {
	s := &MemoryStore{seed: maphash.MakeSeed(), clock: newClock()}
	for i := range s.shards {
		s.shards[i].m = make(map[memKey]*memState)
		s.shards[i].leases = map[uint64]struct{}{0: {}}
		s.shards[i].next = minSweep
	}
	return s
}

// made reports whether s was made by NewMemoryStore: its seed, which
// maphash.MakeSeed never makes zero, is set once there and never written
// again (a shard's map is replaced by a sweep, under the shard's lock).
func (s *MemoryStore) made() bool { return s != nil && s.seed != maphash.Seed{} }

// errUnmadeStore is returned for a MemoryStore not made by NewMemoryStore.
var errUnmadeStore = errors.New("limiter: the MemoryStore is not usable (make it with NewMemoryStore)")

// nanos returns t on the store's clock (see [MemoryStore] and clock).
func (s *MemoryStore) nanos(t time.Time) int64 { return s.clock.nanos(t) }

// A clock reads times in nanoseconds since 1970, counting the monotonic
// time since its creation where it can: a step of the wall clock then
// moves no reading of [time.Now].
type clock struct {
	origin time.Time // creation, with its monotonic reading
	base   int64     // origin in Unix nanoseconds
	mono   bool      // origin has a monotonic reading (none in a synctest bubble)
}

func newClock() clock {
	c := clock{origin: time.Now()}
	c.base, c.mono = c.origin.UnixNano(), hasMono(c.origin)
	return c
}

// nanos returns t on c: c's creation plus the monotonic time between them
// when both have a monotonic reading, and t's wall time otherwise (which is
// the creation plus t.Sub of it, at a fraction of the cost: Sub of wall
// times checks its result with an Add), or when the sum does not fit.
func (c *clock) nanos(t time.Time) int64 {
	if !c.mono || !hasMono(t) {
		return t.UnixNano()
	}
	d := int64(t.Sub(c.origin))
	if d == math.MinInt64 || d == math.MaxInt64 ||
		d > 0 && c.base > math.MaxInt64-d || d < 0 && c.base < math.MinInt64-d {
		return t.UnixNano()
	}
	return c.base + d
}

// hasMono reports whether t has a monotonic clock reading, which Round(0)
// strips.
func hasMono(t time.Time) bool { return t != t.Round(0) }

// Apply carries out b at time now; see [Store] and [Batch]. It fails only
// on a store not made by [NewMemoryStore], and for a batch that is not
// valid (Release and Refund both set, or a check outside the [Check]
// contract: an invalid Kind, a Max or N that is not a positive finite
// number, a Rate or Spend Window that is not positive or is longer than
// [MaxWindow]), and then changes nothing. A reservation's slots are leased
// to b.Lease, so that its release frees them once; a Lease of zero is no
// lease: its release frees one slot of every check whoever took it.
func (s *MemoryStore) Apply(_ context.Context, now time.Time, b *Batch) error {
	if !s.made() {
		// Before the clock is read: a nil store has none.
		return errUnmadeStore
	}
	return s.applyBatch(s.nanos(now), b)
}

// LeasesSlots implements [LeaseStore]: the store's slots are leases (see
// Apply). A [Limiter] decides on it in memory, without a failing Apply, so
// it never abandons one of its leases; an Abandon batch frees what the
// lease holds, as a release does.
func (s *MemoryStore) LeasesSlots() bool { return true }

// Peeks implements [PeekStore]: a Peek check is decided with the others of
// its batch, under the same locks, and takes nothing: no units, no slot,
// no entry in the map.
func (s *MemoryStore) Peeks() bool { return true }

// Refunds implements [RefundStore]: the store carries out Refund batches. A
// refund moves a bucket's theoretical arrival time back by what the
// reservation added; a bucket that is then full is kept as a full one (so
// that the next call on the key need not allocate) and goes at the next
// sweep. Refunding the same reservation twice gives back its units twice,
// units other calls took, never past a full bucket.
func (s *MemoryStore) Refunds() bool { return true }

// op is what the store does with a set of checks.
type op uint8

const (
	opReserve op = iota // take units and slots, if every check allows
	opRelease           // free in-flight slots
	opRefund            // give back rate and spend units
)

// fullTAT is the theoretical arrival time of a bucket that is full at any
// time, the same as no entry: a refunded bucket that is full, and every
// concurrency entry (which has no bucket).
const fullTAT = math.MinInt64

// Len returns the number of (limit, key) entries held, idle ones not yet
// evicted included.
func (s *MemoryStore) Len() int {
	if s == nil {
		return 0
	}
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// Sweep evicts every key that is idle at time now and releases the memory
// they held. The store also sweeps by itself as it grows; Sweep is for
// reclaiming memory after a burst of keys has gone quiet.
func (s *MemoryStore) Sweep(now time.Time) {
	if !s.made() {
		return // it holds nothing
	}
	t := s.nanos(now)
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.sweep(t)
		sh.mu.Unlock()
	}
}

// sweep deletes the idle entries and, when that emptied much of the map,
// copies the rest into a new map, since Go maps never shrink. sh.mu is held.
func (sh *shard) sweep(now int64) {
	before := len(sh.m)
	for k, st := range sh.m {
		if st.tat <= now && st.inflight == 0 {
			delete(sh.m, k)
		}
	}
	if n := len(sh.m); n < before/2 || (n == 0 && before > 0) {
		m := make(map[memKey]*memState, n)
		for k, v := range sh.m {
			m[k] = v
		}
		sh.m = m
	}
	sh.next = max(2*len(sh.m), minSweep)
}

// reserveLease leases the slots of a reservation to *lease, making a new
// lease on this shard when *lease is zero. sh.mu is held.
func (sh *shard) reserveLease(idx uint8, lease *uint64) {
	if *lease == 0 {
		sh.nextLease++
		*lease = sh.nextLease<<8 | uint64(idx)
	}
	sh.leases[*lease] = struct{}{}
	sh.leasePeak = max(sh.leasePeak, len(sh.leases)-1)
}

// holds reports whether lease, not 0, holds slots. sh.mu is held.
func (sh *shard) holds(lease uint64) bool {
	_, ok := sh.leases[lease]
	return ok
}

// releaseLease ends lease, not 0, and reports whether it held slots; the map is made
// anew once it holds a quarter of its peak, since Go maps never shrink.
// sh.mu is held.
func (sh *shard) releaseLease(lease uint64) bool {
	before := len(sh.leases)
	delete(sh.leases, lease) // one lookup, not a lookup and a delete
	if len(sh.leases) == before {
		return false
	}
	n := len(sh.leases) - 1 // leases held: 0 is none
	if sh.leasePeak >= 1024 && n < sh.leasePeak/4 {
		m := make(map[uint64]struct{}, n+1)
		for k := range sh.leases {
			m[k] = struct{}{}
		}
		sh.leases, sh.leasePeak = m, n
	}
	return true
}

// memLimit is what the memory store needs of a limit.
type memLimit struct {
	id     string
	kind   Kind
	max    float64
	window int64
}

// memCheck is a [Check] as the memory store works on it, with its shard and
// its evaluation.
type memCheck struct {
	lim   *memLimit
	key   string
	n     float64
	st    *memState // state found, nil if none
	tat   int64     // new theoretical arrival time, if allowed; for a refund, the reservation's time
	shard uint8
	index uint8 // index of the limit in the Limiter (fast path only)
	peek  bool  // evaluated, not taken (Check.Peek; reservations only)
}

// applyBatch carries out a public Batch.
func (s *MemoryStore) applyBatch(now int64, b *Batch) error {
	o := opReserve
	switch {
	case !s.made():
		return errUnmadeStore
	case b.Release && b.Refund:
		return errors.New("limiter: a batch cannot both release and refund")
	}
	for i := range b.Checks {
		if err := b.Checks[i].Valid(); err != nil {
			return fmt.Errorf("limiter: check %d: %w", i, err)
		}
	}
	switch {
	case b.Release && b.Abandon && b.Lease == 0:
		// Slots without a lease are counts: a failed reservation cannot
		// be told apart from a successful one, so there is nothing to free.
		b.Denied = -1
		return nil
	case b.Release:
		// An Abandon too: Apply never fails, so the reservation was
		// carried out, and its release frees what it took.
		o = opRelease
	case b.Refund:
		o = opRefund
	}
	var lbuf [stackChecks]memLimit
	var cbuf [stackChecks]memCheck
	ls, cs := lbuf[:0], cbuf[:0]
	if len(b.Checks) > stackChecks {
		ls, cs = make([]memLimit, 0, len(b.Checks)), make([]memCheck, 0, len(b.Checks))
	}
	for i := range b.Checks {
		c := &b.Checks[i]
		ls = append(ls, memLimit{id: c.ID, kind: c.Kind, max: c.Max, window: int64(c.Window)})
		cs = append(cs, memCheck{lim: &ls[i], key: c.Key, n: c.N, peek: c.Peek && o == opReserve})
		if o == opRefund {
			cs[i].tat = now - int64(max(b.Elapsed, 0))
		}
	}
	var lease *uint64
	if b.Lease != 0 && o != opRefund {
		lease = &b.Lease
	}
	b.Denied, b.RetryAfter = s.apply(now, cs, o, lease)
	return nil
}

// apply decides, releases or refunds cs atomically, as o says, and returns
// the index of the denying check (or -1) and the wait, as in [Batch].
//
// lease, when not nil, names the lease of the slots: a reservation allowed
// leases its slots to *lease, made anew (on the shard of its first
// concurrency check) when *lease is zero, and one whose *lease holds slots
// already (sent again) takes nothing more; a release frees the slots only
// if *lease holds them. A nil lease counts slots without naming them. A
// lease lives in the shard its low byte names.
func (s *MemoryStore) apply(now int64, cs []memCheck, o op, lease *uint64) (int, time.Duration) {
	// Lock the shards involved in ascending order, each once: all scopes
	// of one decision are decided under the same locks, and two decisions
	// never wait on each other in a cycle.
	var obuf [stackChecks + 1]uint8
	order := obuf[:0]
	if len(cs) > stackChecks {
		order = make([]uint8, 0, len(cs)+1)
	}
	lsh, slots := -1, false // the lease's shard; whether cs takes slots
	for i := range cs {
		idx := uint8(maphash.String(s.seed, cs[i].key))
		cs[i].shard = idx
		if cs[i].lim.kind == Concurrency && !cs[i].peek {
			if !slots && lease != nil && *lease == 0 && o == opReserve {
				lsh = int(idx)
			}
			slots = true
		}
		order = insertShard(order, idx)
	}
	if lease != nil && *lease != 0 && slots {
		lsh = int(uint8(*lease))
		order = insertShard(order, uint8(lsh))
	}
	for _, idx := range order {
		sh := &s.shards[idx]
		sh.mu.Lock()
		// Only on reserve: a release's now is zero, at which no rate or
		// spend entry is idle, and the sweep would only double the
		// threshold; a refund adds no entry.
		if o == opReserve && len(sh.m) >= sh.next {
			sh.sweep(now)
		}
	}
	denied, wait := -1, time.Duration(0)
	switch {
	case o == opRelease:
		if lease == nil || lsh >= 0 && s.shards[lsh].releaseLease(*lease) {
			s.release(cs)
		}
	case o == opRefund:
		s.refund(now, cs)
	case lsh >= 0 && *lease != 0 && s.shards[lsh].holds(*lease):
		// The same reservation again: carried out the first time.
	default:
		denied, wait = s.decide(now, cs)
		if denied < 0 && lsh >= 0 {
			s.shards[lsh].reserveLease(uint8(lsh), lease)
		}
	}
	for _, idx := range order {
		s.shards[idx].mu.Unlock()
	}
	return denied, wait
}

// insertShard inserts idx into the ascending order, unless it is there.
func insertShard(order []uint8, idx uint8) []uint8 {
	j := len(order)
	for j > 0 && order[j-1] > idx {
		j--
	}
	if j > 0 && order[j-1] == idx {
		return order
	}
	order = append(order, 0)
	copy(order[j+1:], order[j:])
	order[j] = idx
	return order
}

func (s *MemoryStore) release(cs []memCheck) {
	for i := range cs {
		c := &cs[i]
		if c.lim.kind != Concurrency {
			continue
		}
		if st := s.shards[c.shard].m[memKey{c.lim.id, c.key}]; st != nil && st.inflight > 0 {
			st.inflight-- // an entry left idle goes at the next sweep
		}
	}
}

// refund moves the theoretical arrival time of every rate and spend check
// back by the increment a reservation of its n adds, less the time since
// the reservation (at c.tat), during which the bucket may have refilled
// (see Limiter.Refund); nothing when that is no less than the increment. A
// bucket full at now, or absent, stays so; one that the refund fills is
// marked full. The locks of the checks' shards are held.
func (s *MemoryStore) refund(now int64, cs []memCheck) {
	for i := range cs {
		c := &cs[i]
		if c.lim.kind == Concurrency {
			continue
		}
		back := increment(c.lim.window, c.n, c.lim.max) - max(now-c.tat, 0)
		if back <= 0 {
			continue
		}
		st := s.shards[c.shard].m[memKey{c.lim.id, c.key}]
		if st == nil || st.tat <= now {
			continue
		}
		st.tat -= back
		if st.tat <= now {
			st.tat = fullTAT
		}
	}
}

// decide evaluates every check against the state at now and, only if all
// allow, commits them all but the Peek ones. The locks of the checks'
// shards are held.
func (s *MemoryStore) decide(now int64, cs []memCheck) (int, time.Duration) {
	denied, wait := -1, time.Duration(0)
	for i := range cs {
		c := &cs[i]
		st := s.shards[c.shard].m[memKey{c.lim.id, c.key}]
		c.st = st
		lim := c.lim
		if lim.kind == Concurrency {
			var n int64
			if st != nil {
				n = st.inflight
			}
			if float64(n)+1 > lim.max && wait == 0 {
				denied = i
			}
			continue
		}
		inc := increment(lim.window, c.n, lim.max)
		if c.n > lim.max || inc > lim.window {
			// More than the bucket holds: never, whatever the rounding
			// of inc (down, which would fit n a little above max).
			if wait >= 0 {
				denied, wait = i, -1
			}
			continue
		}
		tat := now
		if st != nil && st.tat > now {
			tat = st.tat
		}
		c.tat = tat + inc
		if w := time.Duration(c.tat - lim.window - now); w > 0 && wait >= 0 && w > wait {
			denied, wait = i, w
		}
	}
	if denied >= 0 {
		return denied, wait
	}
	for i := range cs {
		c := &cs[i]
		if c.peek {
			continue
		}
		st := c.st
		if st == nil {
			// A concurrency entry has no bucket: full at any time, so
			// that it is idle once its calls end, whatever the clock
			// (a time before 1970 included).
			st = &memState{tat: fullTAT}
			s.shards[c.shard].m[memKey{c.lim.id, c.key}] = st
		}
		if c.lim.kind == Concurrency {
			st.inflight++
		} else {
			st.tat = c.tat
		}
	}
	return -1, 0
}

// increment is the GCRA emission interval for n units of a limit of max
// units per window, in nanoseconds, rounded down: a burst of exactly max
// units then fits in the window whatever the rounding of each increment.
// For n no larger than max it is exact (see exactIncrement): in float64,
// window*n/max may round up across a nanosecond, by more than one past 2^52
// ns (52 days), so that a call of exactly max took more than the window and
// never fitted.
func increment(window int64, n, max float64) int64 {
	if n <= max && window > 0 {
		return exactIncrement(window, n, max)
	}
	x := math.Floor(span(window, n, max))
	if x < 1 {
		return 1 // a positive cost is never free (see Limit)
	}
	if x >= math.MaxInt64/4 {
		return math.MaxInt64 / 4
	}
	return int64(x)
}

// exactIncrement is increment for 0 < n <= m and a positive window:
// window*n/m rounded down exactly, and at least 1; at most window. n and m
// are whole mantissas times powers of two, so the quotient is one of
// integers of up to 128 bits: the float64 estimate is checked with a
// multiplication and, when it is off (rounded across a nanosecond), made
// again by a division.
func exactIncrement(window int64, n, m float64) int64 {
	mn, en := mantissa(n)
	mm, em := mantissa(m)
	// window*n/m = window*mn / (mm * 2^(em-en)), and em >= en as n <= m:
	// floor(floor(window*mn / 2^(em-en)) / mm).
	hi, lo := bits.Mul64(uint64(window), mn)
	switch d := uint(em - en); {
	case d >= 128:
		hi, lo = 0, 0
	case d >= 64:
		hi, lo = 0, hi>>(d-64)
	case d > 0:
		hi, lo = hi>>d, lo>>d|hi<<(64-d)
	}
	q := uint64(window)
	if x := span(window, n, m); x < float64(window) {
		q = uint64(x)
	}
	ph, pl := bits.Mul64(q, mm)
	dl, borrow := bits.Sub64(lo, pl, 0)
	dh, borrow := bits.Sub64(hi, ph, borrow)
	if borrow != 0 || dh != 0 || dl >= mm {
		// The quotient is at most window (n <= m), so hi < mm: no
		// overflow.
		q, _ = bits.Div64(hi, lo, mm)
	}
	if q < 1 {
		return 1 // a positive cost is never free (see Limit)
	}
	return int64(q)
}

// mantissa returns the whole mantissa and the biased exponent of a
// positive finite f: f = mant * 2^(exp-1075).
func mantissa(f float64) (mant uint64, exp int) {
	b := math.Float64bits(f)
	mant, exp = b&(1<<52-1), int(b>>52&0x7ff)
	if exp == 0 {
		return mant, 1 // subnormal
	}
	return mant | 1<<52, exp
}

// span is window*n/max, the time n units of a limit of max units per window
// take, in the unit of window. It is computed in that order, for the
// rounding that increment needs, unless window*n overflows (a huge n): then
// as window*(n/max), so that a cost no larger than a huge max still fits.
func span(window int64, n, max float64) float64 {
	x := float64(window) * n / max
	if math.IsInf(x, 1) {
		x = float64(window) * (n / max)
	}
	return x
}
