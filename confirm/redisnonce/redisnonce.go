package redisnonce

import (
	"context"
	"errors"
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

// Store is a [github.com/mcpguard/mcpguard/confirm.NonceStore] on Redis. It
// is safe for concurrent use.
type Store struct {
	// Timeout bounds each call to Redis; zero means [DefaultTimeout]. Set
	// it before first use.
	Timeout time.Duration

	client redis.UniversalClient
	prefix string
}

// New returns a Store that keeps nonce keys under prefix (for example
// "mcpguard:confirm:") in client. The client is not closed by the Store.
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
	if !expires.After(now) {
		return false, nil
	}
	ttl := expires.Sub(now) + Grace
	ms := (ttl + time.Millisecond - 1) / time.Millisecond
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// go-redis honours the context deadline on the socket only with
	// ContextTimeoutEnabled; wait on the context too, so a hung server
	// cannot hold the request whatever the client's configuration.
	done := make(chan error, 1)
	go func() {
		done <- s.client.Do(ctx, "SET", s.prefix+nonce, "1", "PX", strconv.FormatInt(int64(ms), 10), "NX").Err()
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, redis.Nil):
		return false, nil
	default:
		return false, err
	}
}
