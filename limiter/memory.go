package limiter

import (
	"context"
	"hash/maphash"
	"math"
	"sync"
	"time"
)

const (
	numShards = 256
	// minSweep is the size a shard must reach before it is swept.
	minSweep = 512
	// stackChecks is how many checks a decision handles without allocating.
	stackChecks = 16
)

// A MemoryStore is the in-memory [Store]: exact and cheap, for one process.
// It is the default store of a [Limiter].
//
// State is kept per limit and key in a sharded map. A key whose buckets have
// refilled completely and that holds no in-flight slot is idle: keeping it
// or dropping it makes no difference to any decision, so idle keys are
// evicted as the map grows, and memory stays proportional to the keys active
// within one window, however many distinct keys come and go.
//
// A MemoryStore is safe for concurrent use. Its zero value is not usable;
// call [NewMemoryStore].
type MemoryStore struct {
	seed   maphash.Seed
	shards [numShards]shard
}

type shard struct {
	mu   sync.Mutex
	m    map[memKey]*memState
	next int // sweep when len(m) reaches next
	_    [40]byte
}

type memKey struct{ id, key string }

type memState struct {
	tat      int64 // GCRA theoretical arrival time, Unix nanoseconds
	inflight int64
}

// NewMemoryStore returns an empty [MemoryStore].
func NewMemoryStore() *MemoryStore {
	s := &MemoryStore{seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].m = make(map[memKey]*memState)
		s.shards[i].next = minSweep
	}
	return s
}

// Apply carries out b at time now; it never fails. See [Store].
func (s *MemoryStore) Apply(_ context.Context, now time.Time, b *Batch) error {
	s.apply(now.UnixNano(), b)
	return nil
}

// Len returns the number of (limit, key) entries held, idle ones not yet
// evicted included.
func (s *MemoryStore) Len() int {
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
	t := now.UnixNano()
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

func (s *MemoryStore) shardOf(key string) uint8 {
	return uint8(maphash.String(s.seed, key))
}

// pending is the outcome of evaluating one check.
type pending struct {
	st  *memState
	tat int64
}

func (s *MemoryStore) apply(now int64, b *Batch) {
	var shardBuf [stackChecks]uint8
	var pendBuf [stackChecks]pending
	shards, pend := shardBuf[:0], pendBuf[:0]
	if len(b.Checks) > stackChecks {
		shards = make([]uint8, 0, len(b.Checks))
		pend = make([]pending, 0, len(b.Checks))
	}
	// Lock the shards involved in ascending order, each once: all scopes
	// of one decision are decided under the same locks, and two decisions
	// never wait on each other in a cycle.
	for i := range b.Checks {
		idx := s.shardOf(b.Checks[i].Key)
		j := len(shards)
		shards = append(shards, idx)
		for j > 0 && shards[j-1] > idx {
			shards[j] = shards[j-1]
			j--
		}
		shards[j] = idx
	}
	prev := -1
	for _, idx := range shards {
		if int(idx) != prev {
			sh := &s.shards[idx]
			sh.mu.Lock()
			if len(sh.m) >= sh.next {
				sh.sweep(now)
			}
			prev = int(idx)
		}
	}
	s.decide(now, b, pend)
	prev = -1
	for _, idx := range shards {
		if int(idx) != prev {
			s.shards[idx].mu.Unlock()
			prev = int(idx)
		}
	}
}

// decide carries out b with the locks of its shards held; pend is scratch
// space for len(b.Checks) entries.
func (s *MemoryStore) decide(now int64, b *Batch, pend []pending) {
	if b.Release {
		for i := range b.Checks {
			c := &b.Checks[i]
			if c.Kind != Concurrency {
				continue
			}
			sh := &s.shards[s.shardOf(c.Key)]
			k := memKey{c.ID, c.Key}
			if st := sh.m[k]; st != nil && st.inflight > 0 {
				st.inflight--
				if st.inflight == 0 && st.tat == 0 {
					delete(sh.m, k)
				}
			}
		}
		return
	}

	// Evaluate every check against the current state.
	b.Denied, b.RetryAfter = -1, 0
	never := false
	for i := range b.Checks {
		c := &b.Checks[i]
		st := s.shards[s.shardOf(c.Key)].m[memKey{c.ID, c.Key}]
		p := pending{st: st}
		switch c.Kind {
		case Concurrency:
			var n int64
			if st != nil {
				n = st.inflight
			}
			if float64(n)+1 > c.Max && b.RetryAfter == 0 {
				b.Denied = i
			}
		default:
			inc := increment(c.Window, c.N, c.Max)
			if inc > int64(c.Window) {
				if !never {
					never = true
					b.Denied, b.RetryAfter = i, -1
				}
				break
			}
			tat := now
			if st != nil && st.tat > now {
				tat = st.tat
			}
			p.tat = tat + inc
			if wait := p.tat - int64(c.Window) - now; wait > 0 && !never && time.Duration(wait) > b.RetryAfter {
				b.Denied, b.RetryAfter = i, time.Duration(wait)
			}
		}
		pend = append(pend, p)
	}
	if b.Denied >= 0 {
		return
	}

	// Allowed: commit every check.
	for i := range b.Checks {
		c, p := &b.Checks[i], &pend[i]
		st := p.st
		if st == nil {
			st = new(memState)
			s.shards[s.shardOf(c.Key)].m[memKey{c.ID, c.Key}] = st
		}
		if c.Kind == Concurrency {
			st.inflight++
		} else {
			st.tat = p.tat
		}
	}
}

// increment is the GCRA emission interval for n units of a limit of max
// units per window, in nanoseconds, rounded down: a burst of exactly max
// units then fits in the window whatever the rounding of each increment.
func increment(window time.Duration, n, max float64) int64 {
	x := math.Floor(float64(window) * n / max)
	if x >= math.MaxInt64/4 {
		return math.MaxInt64 / 4
	}
	return int64(x)
}
