package redislimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/mcpguard/mcpguard/internal/gaveup"
	"github.com/mcpguard/mcpguard/internal/logsafe"
	"github.com/mcpguard/mcpguard/internal/redisevict"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/redis/go-redis/v9"
)

// DefaultPrefix is the key prefix used when [Options].Prefix is empty.
const DefaultPrefix = "{mcpguard-limiter}:"

// Options configures a [Store]. A nil *Options means the defaults.
type Options struct {
	// Prefix starts every key the store writes. The zero value means
	// [DefaultPrefix]. On Redis Cluster it must contain a hash tag, as the
	// default does, so that all keys of a decision share one slot: its
	// first '{' followed, within the prefix, by a '}' with something
	// between (else the tag would end in the caller's key, or be empty).
	// Otherwise Redis refuses the script (CROSSSLOT) and decisions fail.
	Prefix string
	// Timeout bounds every call to Redis. Zero or negative means 250ms.
	Timeout time.Duration
	// Lease is how long an in-flight slot stays taken when it is never
	// released (its replica crashed), in whole microseconds (a positive
	// Lease under one is one). The zero value, or a negative one, means 5
	// minutes.
	Lease time.Duration
	// ClientTime makes decisions at the time the limiter passes rather than
	// at the Redis server's time. Replicas whose clocks differ then disagree;
	// it is meant for tests that control time, such as limitertest. Keys
	// still expire on the server's clock: a limiter's clock that runs slower
	// than the server's (a test's standing still while real time passes)
	// sees buckets refill, and leases end, early. Rate and spend checks
	// take any time; a concurrency check (an in-flight slot, scored by its
	// expiry since 1970) fails at a time before 1970. The zero value uses
	// the server's time.
	ClientTime bool
}

// A Store is a [limiter.Store] keeping its state in Redis. It is safe for
// concurrent use, and several Stores (in several processes) on one Redis
// share their limits exactly when they use the same Prefix.
type Store struct {
	client     redis.Scripter
	prefix     string
	timeout    time.Duration
	leaseUS    int64
	clientTime bool
	instance   string
}

// New returns a Store using client, which may be a *redis.Client, a
// *redis.ClusterClient (see the package documentation) or any other
// [redis.Scripter] (one without an Info method, which [Store.CheckServer]
// needs, fails that check), and options opts (nil means defaults). A Store
// with a nil client, or the zero Store, fails every Apply and CheckServer
// with an error (the limiter then fails as configured, closed by default).
func New(client redis.Scripter, opts *Options) *Store {
	if opts == nil {
		opts = &Options{}
	}
	s := &Store{
		client:     client,
		prefix:     opts.Prefix,
		timeout:    opts.Timeout,
		leaseUS:    opts.Lease.Microseconds(),
		clientTime: opts.ClientTime,
	}
	if s.prefix == "" {
		s.prefix = DefaultPrefix
	}
	if s.timeout <= 0 {
		s.timeout = 250 * time.Millisecond
	}
	switch {
	case opts.Lease > 0 && s.leaseUS == 0:
		s.leaseUS = 1 // the script counts in microseconds
	case s.leaseUS <= 0:
		s.leaseUS = (5 * time.Minute).Microseconds()
	}
	var id [8]byte
	rand.Read(id[:])
	s.instance = hex.EncodeToString(id[:])
	return s
}

// LeasesSlots implements [limiter.LeaseStore]: in-flight slots are leases
// named by their token, so a failed reservation's slot can be abandoned.
func (s *Store) LeasesSlots() bool { return true }

// Refunds implements [limiter.RefundStore]: a refund is one script round
// trip that moves every rate and spend bucket back by what the reservation
// took, when [limiter.Batch].Elapsed is shorter than that (see
// [limiter.Batch]), at the Redis server's time (at the limiter's time with
// [Options].ClientTime), never past full: a bucket that the refund fills is
// deleted, and one already full or absent is left as it is. A refund
// batch with a Lease (the [limiter.Limiter] numbers each refund) is carried
// out once even when the client sends it again, as go-redis does after a
// lost reply: the script marks it done, under the key prefix, for five
// minutes. A second refund of the same reservation (another batch, another
// Lease) gives back its units again.
func (s *Store) Refunds() bool { return true }

// Peeks implements [limiter.PeekStore]: a Peek check (the cost of a dry
// run) is evaluated in the same script, at the same instant, as the other
// checks of its decision, and the script writes nothing for it: no units
// taken, no key made, no expiry moved. A dry run is thus one round trip,
// like any decision.
func (s *Store) Peeks() bool { return true }

// CheckServer reports an error unless every Redis server the Store writes
// to runs with maxmemory-policy noeviction. Under any other policy a full
// Redis may evict the store's keys (the volatile-* policies too, as every
// key has an expiry), forgetting spent budgets and the slots of calls in
// flight: the caps then admit their worth again. Under noeviction a full
// Redis refuses the write instead, and the limiter fails as configured
// (closed by default). Call it at start-up and do not serve when it fails.
// It reads INFO memory (on each master of a *redis.ClusterClient), so it
// fails when the Redis user may not run INFO or the client has no Info
// method, and it refuses a *redis.Ring of more than one shard (a Ring
// moves the keys of a shard it finds down to the others, where they are
// unknown). It cannot see the other ways state is lost: a failover to a
// replica that missed a write, a restart without persistence, a FLUSHALL.
// ctx and [Options].Timeout bound it, on a client without
// ContextTimeoutEnabled too (the check is then left running on its own
// goroutine until go-redis's ReadTimeout).
func (s *Store) CheckServer(ctx context.Context) error {
	if s == nil || s.client == nil {
		return errNoClient
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := redisevict.Check(ctx, s.client, "spent budgets and the slots of calls in flight, which the caps would then admit again"); err != nil {
		return fmt.Errorf("redislimit: %w", err)
	}
	return nil
}

// errNoClient is returned by a Store that has no Redis client.
var errNoClient = errors.New("redislimit: the store has no Redis client (use New with a client)")

// Key returns the Redis key holding the state of check c.
func (s *Store) Key(c limiter.Check) string {
	return s.prefix + c.ID + ":" + c.Key
}

// Apply carries out b in one round trip; see [limiter.Store]. It returns an
// error when Redis does not answer within the timeout, ctx is done, or the
// script fails (or the client panics, as a nil *redis.Client does), and,
// without a round trip, for a Store without a client (see [New]), for a
// batch that is not valid (Release and Refund both set, a check outside the
// [limiter.Check] contract: an invalid kind, a Max or N that is not a
// positive finite number, a Rate or Spend Window shorter than a
// microsecond or longer than [limiter.MaxWindow]), and for a reservation
// or release with a Concurrency check (not a Peek) and no Lease: a slot is
// a lease named by it, so reservations without one would all share one
// slot. The [limiter.Limiter] gives a Lease to every reservation that
// takes a slot.
func (s *Store) Apply(ctx context.Context, now time.Time, b *limiter.Batch) error {
	if s == nil || s.client == nil {
		return errNoClient
	}
	if b.Release && b.Refund {
		return errors.New("redislimit: a batch cannot both release and refund")
	}
	keys := make([]string, len(b.Checks))
	args := make([]any, 4, 4+4*len(b.Checks))
	args[0] = ""
	if s.clientTime {
		args[0] = now.UnixMicro()
	}
	args[1] = "a"
	switch {
	case b.Release && b.Abandon:
		args[1] = "x"
	case b.Release:
		args[1] = "r"
	case b.Refund:
		args[1] = "f"
	}
	args[2] = s.instance + ":" + strconv.FormatUint(b.Lease, 36)
	args[3] = s.leaseUS
	if b.Refund {
		args[3] = max(b.Elapsed, 0).Microseconds()
	}
	for i, c := range b.Checks {
		keys[i] = s.Key(c)
		var kind string
		switch c.Kind {
		case limiter.Rate:
			kind = "r"
		case limiter.Spend:
			kind = "s"
		case limiter.Concurrency:
			kind = "c"
		default:
			return fmt.Errorf("redislimit: check %d has invalid kind %v", i, c.Kind)
		}
		if err := c.Valid(); err != nil {
			return fmt.Errorf("redislimit: check %d: %w", i, err)
		}
		if c.Kind == limiter.Concurrency && !c.Peek && !b.Refund && b.Lease == 0 {
			return fmt.Errorf("redislimit: check %d: a concurrency check needs the batch's Lease, which names its slot", i)
		}
		if c.Kind == limiter.Concurrency && s.clientTime && now.UnixMicro() <= 0 {
			// A slot's score is its expiry in microseconds since 1970, an
			// abandoned one's minus that: before 1970 the two would be
			// taken for each other.
			return fmt.Errorf("redislimit: check %d: with ClientTime, a concurrency check needs a time after 1970 (%v)", i, now)
		}
		if c.Kind != limiter.Concurrency && c.Window < time.Microsecond {
			// The store's resolution.
			return fmt.Errorf("redislimit: check %d: window %v is shorter than a microsecond", i, c.Window)
		}
		if c.Peek && args[1] == "a" {
			kind = "p" + kind // evaluated, not taken
		}
		args = append(args, kind, c.N, c.Max, c.Window.Microseconds())
	}

	if b.Refund && b.Lease != 0 {
		// The refund's marker: see Refunds.
		keys = append(keys, s.prefix+"refund:"+args[2].(string))
	}

	caller := ctx
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	type result struct {
		v   []int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		// A panic here (a nil *redis.Client) would end the process: no
		// recover of the caller's reaches this goroutine.
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("the Redis client panicked: %s", logsafe.PanicText(p))}
			}
		}()
		v, err := script.Run(ctx, s.client, keys, args...).Int64Slice()
		done <- result{v, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		// go-redis honours ctx only with ContextTimeoutEnabled; do not
		// wait for its own, longer timeouts and retries.
		r.err = ctx.Err()
	}
	if r.err != nil {
		// A deadline passed though not yet marked done counts: a client
		// timing out at it (ContextTimeoutEnabled) answers first.
		if cerr := gaveup.Err(caller); cerr != nil {
			// The caller's context ended first: not Redis's fault.
			return fmt.Errorf("redislimit: the caller gave up before redis answered: %w", cerr)
		}
		if errors.Is(r.err, context.DeadlineExceeded) {
			return fmt.Errorf("redislimit: no answer from redis within %v (unreachable or too slow): %w", s.timeout, r.err)
		}
		return fmt.Errorf("redislimit: %w", r.err)
	}
	if b.Release || b.Refund {
		return nil
	}
	if len(r.v) != 2 || r.v[0] < -1 || r.v[0] >= int64(len(b.Checks)) ||
		r.v[1] < -1 || r.v[1] > math.MaxInt64/int64(time.Microsecond) {
		// Not an answer of the script: a wait that is not -1 (never), or
		// that overflows a Duration, would be taken for some RetryAfter.
		return fmt.Errorf("redislimit: unexpected script result %v", r.v)
	}
	b.Denied = int(r.v[0])
	b.RetryAfter = time.Duration(r.v[1]) * time.Microsecond
	return nil
}
