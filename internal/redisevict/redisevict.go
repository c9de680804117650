// Package redisevict checks that a Redis deployment keeps the keys it is
// given: that every server a client writes to runs with maxmemory-policy
// noeviction, and that the client does not move keys between shards. The
// Redis stores of the limiter and of the confirmation nonces use it; a key
// either of them loses (a spent budget, a slot in flight, a used nonce)
// fails open.
package redisevict

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard/internal/logsafe"
)

// Check reports an error unless every Redis server c writes to runs with
// maxmemory-policy noeviction. what names the keys in the errors (such as
// "used nonces"). It reads INFO memory, on each master of a
// *redis.ClusterClient, so it fails when the Redis user may not run INFO;
// it refuses a *redis.Ring of more than one shard (a Ring moves the keys
// of a shard it finds down to the others, where they are unknown) and a
// client it cannot ask (one without an Info method). A client that panics
// (a nil *redis.Client) gives an error. ctx bounds it: the check runs on
// its own goroutine, which Check leaves behind when ctx ends first (a
// client without ContextTimeoutEnabled waits for a hung server up to its
// ReadTimeout, and more with its retries).
func Check(ctx context.Context, c any, what string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cannot read the server's maxmemory-policy: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- check(ctx, c, what) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("cannot read the server's maxmemory-policy: %w", ctx.Err())
	}
}

// check is Check, on the caller's goroutine.
func check(ctx context.Context, c any, what string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the Redis client panicked: %s", logsafe.PanicText(r))
		}
	}()
	switch c := c.(type) {
	case nil:
		return errors.New("no Redis client")
	case *redis.ClusterClient:
		err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			info, err := n.Info(ctx, "memory").Result()
			if err := policy(info, err, what); err != nil {
				return &masterError{addr: n.Options().Addr, err: err}
			}
			return nil
		})
		var me *masterError
		if err != nil && !errors.As(err, &me) {
			return fmt.Errorf("cannot read the cluster's masters: %w", err)
		}
		return err
	case *redis.Ring:
		// Len counts the shards up now; the options, those configured.
		if n := max(c.Len(), len(c.Options().Addrs)); n > 1 {
			return fmt.Errorf("the client is a Ring of %d shards, which may move %s between them and forget them", n, what)
		}
	}
	ic, ok := c.(interface {
		Info(ctx context.Context, section ...string) *redis.StringCmd
	})
	if !ok {
		return fmt.Errorf("cannot read the maxmemory-policy through a %T", c)
	}
	info, err := ic.Info(ctx, "memory").Result()
	return policy(info, err, what)
}

// masterError is the error of one master of a cluster.
type masterError struct {
	addr string
	err  error
}

func (e *masterError) Error() string { return "master " + e.addr + ": " + e.err.Error() }
func (e *masterError) Unwrap() error { return e.err }

// policy reads maxmemory_policy from info, a reply to INFO memory (or
// err); the error it returns names what.
func policy(info string, err error, what string) error {
	if err != nil {
		return fmt.Errorf("cannot read the server's maxmemory-policy: %w", err)
	}
	for line := range strings.Lines(info) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "maxmemory_policy:"); ok {
			if p != "noeviction" {
				return fmt.Errorf("the server's maxmemory-policy is %q: it may evict %s; set noeviction", p, what)
			}
			return nil
		}
	}
	return errors.New("cannot read the server's maxmemory-policy: INFO memory does not show it")
}
