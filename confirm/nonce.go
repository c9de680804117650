package confirm

import (
	"container/heap"
	"context"
	"errors"
	"maps"
	"sync"
	"time"
)

// A NonceStore remembers confirmation nonces so that each one is accepted
// once. Implementations must be safe for concurrent use; when several server
// replicas verify confirmations they must share one store. A store that
// panics (its bug) in Consume or Used has failed, as with an error: the
// panic is logged to slog.Default at Error, with its stack.
type NonceStore interface {
	// Consume records nonce as used until expires and reports whether this
	// was its first use. A nonce whose expiry is not after now is never
	// first. A store that cannot decide returns an error, and the
	// confirmation is refused.
	Consume(ctx context.Context, nonce string, now, expires time.Time) (first bool, err error)
}

// A NonceChecker is a [NonceStore] that can also tell whether a nonce was
// used, without recording anything. [Ticket.Used] asks it, so that a caller
// can refuse a replayed state before it acts on the state (charges limits,
// writes an audit intent) and consume it only afterwards. A store that does
// not implement it leaves the decision to Consume alone. [MemoryNonceStore]
// and the Redis store of package redisnonce implement it.
type NonceChecker interface {
	NonceStore
	// Used reports whether a Consume of nonce with the same now and
	// expires would not be first: the nonce was consumed already, may
	// have been (a store that forgets expired nonces counts the ones it
	// can no longer tell apart as used), or expires is not after now. It
	// records nothing, so a false answer is no promise: a concurrent
	// Consume may still use the nonce first. A store that cannot decide
	// returns an error.
	Used(ctx context.Context, nonce string, now, expires time.Time) (bool, error)
}

// NonceStoreFunc adapts a function to a [NonceStore].
type NonceStoreFunc func(ctx context.Context, nonce string, now, expires time.Time) (bool, error)

// Consume calls f. A nil f cannot decide: it returns an error, and the
// confirmation is refused ([NewSigner] refuses a nil f as Options.Nonces).
func (f NonceStoreFunc) Consume(ctx context.Context, nonce string, now, expires time.Time) (bool, error) {
	if f == nil {
		return false, errNilStoreFunc
	}
	return f(ctx, nonce, now, expires)
}

// errNilStoreFunc is returned by a nil NonceStoreFunc.
var errNilStoreFunc = errors.New("confirm: the NonceStoreFunc is nil")

// MemoryNonceStore is an in-process [NonceStore]. It forgets each nonce once
// its expiry has passed (expired entries are evicted on later calls), so its
// size is bounded by the number of confirmations used per TTL (states issued
// and never used cost it nothing), and the memory a burst took is given back
// once the burst has expired. A nonce that expires no later than one it
// forgot is never first, whatever a later call's clock says. It suits a
// single server process; nonces are lost on restart, which is safe only
// while every outstanding state expires no later than the restart completes.
// The zero value is not usable ([NewSigner] refuses it, and its Consume
// and Used return an error); call [NewMemoryNonceStore]. It is safe for
// concurrent use.
type MemoryNonceStore struct {
	mu    sync.Mutex
	seen  map[string]time.Time
	queue expiryHeap
	// horizon is the latest now any call passed. Nonces expiring by then
	// are forgotten, so a call whose now is earlier (read before a
	// concurrent call's, or before the clock stepped back) must not
	// count one of them as a first use: calls use the horizon as their
	// now, but never more than nonceGrace past their own.
	horizon time.Time
	// forgotten is the latest expiry of a nonce forgotten so far: a nonce
	// expiring no later may have been used and forgotten, so it is never
	// first, whatever the clock of the call says (a step back of more
	// than nonceGrace included).
	forgotten time.Time
	// peak is the most nonces seen held since it was last made: a Go
	// map keeps the room it grew to, so once it holds a quarter of that
	// or less it is copied into a map of its present size.
	peak int
}

// nonceGrace bounds how far past a call's own now the memory store's
// horizon can move its idea of the time.
const nonceGrace = time.Minute

// NewMemoryNonceStore returns an empty [MemoryNonceStore].
func NewMemoryNonceStore() *MemoryNonceStore {
	return &MemoryNonceStore{seen: make(map[string]time.Time)}
}

// errUnmadeStore is returned for a MemoryNonceStore not made by
// NewMemoryNonceStore.
var errUnmadeStore = errors.New("confirm: the MemoryNonceStore is not usable (make it with NewMemoryNonceStore)")

// made reports whether m was made by NewMemoryNonceStore: its map is set
// there, and replaced only by another, under m.mu.
func (m *MemoryNonceStore) made() bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seen != nil
}

// Consume implements [NonceStore]. On a store not made by
// [NewMemoryNonceStore] it returns an error.
func (m *MemoryNonceStore) Consume(_ context.Context, nonce string, now, expires time.Time) (bool, error) {
	if m == nil {
		return false, errUnmadeStore
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		return false, errUnmadeStore
	}
	if now.After(m.horizon) {
		m.horizon = now
	}
	now = actingNow(m.horizon, now)
	for len(m.queue) > 0 && !m.queue[0].expires.After(now) {
		e := heap.Pop(&m.queue).(entry)
		if exp, ok := m.seen[e.nonce]; ok && exp.Equal(e.expires) {
			delete(m.seen, e.nonce)
		}
		if e.expires.After(m.forgotten) {
			m.forgotten = e.expires
		}
	}
	if c := cap(m.queue); c > 1024 && len(m.queue) < c/4 {
		m.queue = append(make(expiryHeap, 0, c/2), m.queue...)
	}
	if n := len(m.seen); m.peak > 1024 && n <= m.peak/4 {
		seen := make(map[string]time.Time, n)
		maps.Copy(seen, m.seen)
		m.seen, m.peak = seen, n
	}
	if !expires.After(now) || !expires.After(m.forgotten) {
		return false, nil
	}
	if _, used := m.seen[nonce]; used {
		return false, nil
	}
	m.seen[nonce] = expires
	m.peak = max(m.peak, len(m.seen))
	heap.Push(&m.queue, entry{nonce: nonce, expires: expires})
	return true, nil
}

// Used implements [NonceChecker]. It answers as Consume would, by the same
// horizon and forgotten expiry, and changes neither. On a store not made
// by [NewMemoryNonceStore] it returns an error.
func (m *MemoryNonceStore) Used(_ context.Context, nonce string, now, expires time.Time) (bool, error) {
	if m == nil {
		return false, errUnmadeStore
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		return false, errUnmadeStore
	}
	now = actingNow(m.horizon, now)
	if !expires.After(now) || !expires.After(m.forgotten) {
		return true, nil
	}
	// An entry Consume would evict at now expires by now; so does this
	// nonce if it is that entry (a nonce comes with one expiry), and it
	// was answered above.
	_, used := m.seen[nonce]
	return used, nil
}

// actingNow returns the time a call whose own clock reads now acts at: the
// later of now and horizon, but at most nonceGrace past now, so that one
// far-ahead clock reading cannot make every later confirmation look
// expired.
func actingNow(horizon, now time.Time) time.Time {
	if lim := now.Add(nonceGrace); horizon.After(lim) {
		return lim
	}
	if now.After(horizon) {
		return now
	}
	return horizon
}

// Len reports how many nonces are currently remembered (none by a nil
// store).
func (m *MemoryNonceStore) Len() int {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.seen)
}

type entry struct {
	nonce   string
	expires time.Time
}

// expiryHeap is a min-heap of entries by expiry.
type expiryHeap []entry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expires.Before(h[j].expires) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(entry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
