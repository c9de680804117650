package redisnonce

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Grace is how long past its expiry a nonce is remembered, so that a
// replica whose clock lags by up to Grace still sees it as used.
const Grace = time.Minute

// DefaultTimeout bounds each call to Redis when [Store.Timeout] is zero, on
// top of the caller's context: a hung Redis refuses confirmations quickly
// instead of holding the request. Set ContextTimeoutEnabled in the client's
// options so that the abandoned command also frees its connection at the
// deadline.
const DefaultTimeout = time.Second

// Store is a [github.com/mcpguard/mcpguard/confirm.NonceStore] on Redis,
// and a [github.com/mcpguard/mcpguard/confirm.NonceChecker]. It is safe for
// concurrent use. The zero Store has no client and refuses every nonce
// with an error (so the confirmation is refused); use [New].
type Store struct {
	// Timeout bounds each call to Redis; zero means [DefaultTimeout]. Set
	// it before first use.
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
// was its first use, with one atomic SET NX PX. A nonce whose expiry is not
// after now is never first and is not written. Errors from Redis and the
// timeout are returned as is, and the caller refuses the confirmation; a
// command that timed out may still have recorded the nonce, which only
// makes the confirmation fail closed.
func (s *Store) Consume(ctx context.Context, nonce string, now, expires time.Time) (bool, error) {
	if s == nil {
		return false, errNoClient
	}
	if !expires.After(now) {
		return false, nil
	}
	ttl := expires.Sub(now) + Grace
	ms := (ttl + time.Millisecond - 1) / time.Millisecond
	_, err := s.do(ctx, "SET", s.prefix+nonce, "1", "PX", strconv.FormatInt(int64(ms), 10), "NX")
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, redis.Nil):
		return false, nil
	default:
		return false, err
	}
}

// Used implements [github.com/mcpguard/mcpguard/confirm.NonceChecker]: it
// reports whether nonce's key exists, with one EXISTS, bounded by the same
// timeout as Consume, and writes nothing. A nonce whose expiry is not after
// now counts as used without asking Redis. Errors from Redis and the
// timeout are returned as is.
func (s *Store) Used(ctx context.Context, nonce string, now, expires time.Time) (bool, error) {
	if s == nil {
		return false, errNoClient
	}
	if !expires.After(now) {
		return true, nil
	}
	v, err := s.do(ctx, "EXISTS", s.prefix+nonce)
	if err != nil {
		return false, err
	}
	n, ok := v.(int64)
	if !ok {
		return false, fmt.Errorf("redisnonce: EXISTS replied %T", v)
	}
	return n > 0, nil
}

// errNoClient is returned by a Store that has no Redis client.
var errNoClient = errors.New("redisnonce: the store has no Redis client (use New with a client)")

// do runs one command, bounded by the Timeout on top of ctx. A Store
// without a client, and a client that panics (a nil *redis.Client), give
// an error: the command runs on its own goroutine, where a panic would end
// the process.
func (s *Store) do(ctx context.Context, args ...any) (any, error) {
	if s.client == nil {
		return nil, errNoClient
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
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
				done <- reply{nil, fmt.Errorf("redisnonce: the Redis client panicked: %v", r)}
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
