package redisnonce

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard/internal/logsafe"
	"github.com/mcpguard/mcpguard/internal/redisevict"
)

// Grace is how long past its expiry, on the Redis server's clock, a nonce
// is remembered, so that a replica whose clock lags by up to Grace may
// still use a state it counts as valid. A nonce is never first once its
// expiry plus Grace has passed on that clock (see [Store.Consume]).
const Grace = time.Minute

// DefaultTimeout bounds each call to Redis when [Store.Timeout] is zero or
// negative, on top of the caller's context: a hung Redis refuses
// confirmations quickly instead of holding the request. Set
// ContextTimeoutEnabled in the client's options so that the abandoned
// command also frees its connection at the deadline.
const DefaultTimeout = time.Second

// Store is a [github.com/mcpguard/mcpguard/confirm.NonceStore] on Redis,
// and a [github.com/mcpguard/mcpguard/confirm.NonceChecker]. It is safe for
// concurrent use. The zero Store has no client and refuses every nonce
// with an error (so the confirmation is refused); use [New].
type Store struct {
	// Timeout bounds each call to Redis; zero or negative means
	// [DefaultTimeout]. Set it before first use.
	Timeout time.Duration

	client redis.UniversalClient
	prefix string
}

// New returns a Store that keeps nonce keys under prefix (for example
// "mcpguard:confirm:") in client. The client is not closed by the Store.
// With a nil client, every call returns an error.
func New(client redis.UniversalClient, prefix string) *Store {
	return &Store{client: client, prefix: prefix}
}

// Consume records nonce until expires plus [Grace] and reports whether this
// was its first use, with one atomic script on the Redis server (a SET NX
// PX that also recognises its own write). A nonce whose expiry is not after
// now is never first and is not written. The key's lifetime is reckoned on
// the Redis server's clock (TIME), which all replicas share: it lives until
// expires plus Grace by that clock, whatever the clock of the replica that
// used it reads, and a nonce whose expiry plus Grace has passed by that
// clock is never first, since its key, had it been used, would be gone (a
// replica whose clock lags by more than Grace is refused its late states
// rather than accepting them twice). Errors from Redis and the timeout are
// returned as is, and the caller refuses the confirmation.
//
// Each call writes a random value of its own under the nonce's key, so
// that when the client sends the command again because the first reply was
// lost (go-redis retries a dropped connection, up to MaxRetries), the
// repeat finds its own value and the call is still told it was first,
// rather than that someone else used the nonce. And when the call returns
// an error, although its write may have reached Redis, it then deletes the
// key in the background if the key still holds its value (once, within
// the Timeout), so that a retry with the same state is not refused as a
// replay of a use nobody made. If Redis is unreachable for that too, or
// the write arrives only after the delete, the nonce stays used: the
// confirmation fails closed, and the retry is told it was used.
func (s *Store) Consume(ctx context.Context, nonce string, now, expires time.Time) (bool, error) {
	if s == nil {
		return false, errNoClient
	}
	if !expires.After(now) {
		return false, nil
	}
	key, token := s.prefix+nonce, rand.Text()
	v, err := s.do(ctx, "EVAL", consumeScript, 1, key, token, forgetAt(expires))
	n, ok := v.(int64)
	if err == nil && !ok {
		err = fmt.Errorf("redisnonce: the consume script replied %T", v)
	}
	if err != nil {
		// The caller refuses the confirmation: give the nonce back if
		// this call's write took it. Best effort: on failure it stays
		// used.
		go s.do(context.WithoutCancel(ctx), "EVAL", releaseScript, 1, key, token)
		return false, err
	}
	return n == 1, nil
}

// maxForgetAt bounds the time a key is kept until, in unix milliseconds:
// 2^53, about the year 287000, which Lua's numbers hold exactly (an
// expiry a Signer's state can carry goes up to 2^62 seconds).
const maxForgetAt = 1 << 53

// forgetAt returns, in unix milliseconds (rounded up) as a decimal string,
// the time on Redis's clock until which the key of a nonce that expires
// at expires is kept: expires plus Grace, at most maxForgetAt.
func forgetAt(expires time.Time) string {
	sec := expires.Unix()
	if sec >= maxForgetAt/1000-int64(Grace/time.Second) {
		return strconv.FormatInt(maxForgetAt, 10)
	}
	ms := sec*1000 + int64(Grace/time.Millisecond) + int64(expires.Nanosecond()/int(time.Millisecond))
	if expires.Nanosecond()%int(time.Millisecond) != 0 {
		ms++
	}
	return strconv.FormatInt(ms, 10)
}

// redisNow is the Lua code that sets now to the Redis server's clock, in
// unix milliseconds.
const redisNow = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// releaseScript deletes KEYS[1] if it holds ARGV[1]: a consume whose caller
// was told it failed gives its nonce back, and no one else's.
const releaseScript = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`

// consumeScript sets KEYS[1] to ARGV[1] until ARGV[2] (unix milliseconds
// on the server's clock) unless it exists or that time has passed, and
// returns 1 when it set it, or when it holds ARGV[1] already (this call's
// own write, sent again after a lost reply), else 0.
const consumeScript = redisNow + `local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then return 1 end
local px = tonumber(ARGV[2]) - now
if v or px <= 0 then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', px)
return 1`

// usedScript returns 1 when KEYS[1] exists or the time ARGV[1] (unix
// milliseconds on the server's clock) until which it would be kept has
// passed, else 0. It writes nothing.
const usedScript = redisNow + `if tonumber(ARGV[1]) <= now then return 1 end
return redis.call('EXISTS', KEYS[1])`

// Used implements [github.com/mcpguard/mcpguard/confirm.NonceChecker]: it
// reports whether nonce's key exists, or whether the time until which it
// would be kept (expires plus Grace on Redis's clock, as Consume reckons
// it) has passed, with one script, bounded by the same timeout as Consume,
// and writes nothing. A nonce whose expiry is not after now counts as used
// without asking Redis. Errors from Redis and the timeout are returned as
// is.
func (s *Store) Used(ctx context.Context, nonce string, now, expires time.Time) (bool, error) {
	if s == nil {
		return false, errNoClient
	}
	if !expires.After(now) {
		return true, nil
	}
	v, err := s.do(ctx, "EVAL", usedScript, 1, s.prefix+nonce, forgetAt(expires))
	if err != nil {
		return false, err
	}
	n, ok := v.(int64)
	if !ok {
		return false, fmt.Errorf("redisnonce: the used script replied %T", v)
	}
	return n > 0, nil
}

// CheckServer reports an error unless every Redis server the Store writes
// nonces to runs with maxmemory-policy noeviction: the fail-closed option
// for eviction. Under any other policy a full Redis may evict used nonces'
// keys (the volatile-* policies too, as every nonce key has a TTL), and
// their states are then accepted again; under noeviction it refuses the
// write instead, and the confirmation is refused. Call it at start-up and
// do not serve when it fails. It reads INFO memory (on each master of a
// *redis.ClusterClient), so it fails when the Redis user may not run INFO,
// and it refuses a *redis.Ring of more than one shard (see the package
// doc). It cannot see the other ways a nonce is lost: a failover to a
// replica that missed the write, a restart without persistence, a
// FLUSHALL. ctx and the Timeout bound it, on a client without
// ContextTimeoutEnabled too (the check is then left running on its own
// goroutine until go-redis's ReadTimeout).
func (s *Store) CheckServer(ctx context.Context) error {
	if s == nil || s.client == nil {
		return errNoClient
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	if err := redisevict.Check(ctx, s.client, "used nonces, whose confirmations would then be accepted again"); err != nil {
		return fmt.Errorf("redisnonce: %w", err)
	}
	return nil
}

// errNoClient is returned by a Store that has no Redis client.
var errNoClient = errors.New("redisnonce: the store has no Redis client (use New with a client)")

// timeout returns the Timeout, or DefaultTimeout when it is not set.
func (s *Store) timeout() time.Duration {
	if s.Timeout <= 0 {
		return DefaultTimeout
	}
	return s.Timeout
}

// do runs one command, bounded by the Timeout on top of ctx. A Store
// without a client, and a client that panics (a nil *redis.Client), give
// an error: the command runs on its own goroutine, where a panic would end
// the process.
func (s *Store) do(ctx context.Context, args ...any) (any, error) {
	if s.client == nil {
		return nil, errNoClient
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	// go-redis honours the context deadline on the socket only with
	// ContextTimeoutEnabled; wait on the context too, so a hung server
	// cannot hold the request whatever the client's configuration.
	type reply struct {
		v   any
		err error
	}
	done := make(chan reply, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- reply{nil, fmt.Errorf("redisnonce: the Redis client panicked: %s", logsafe.PanicText(r))}
			}
		}()
		v, err := s.client.Do(ctx, args...).Result()
		done <- reply{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
