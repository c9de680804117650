package redislimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/redis/go-redis/v9"
)

var agreeT0 = time.Unix(1_700_000_000, 0)

func agreeClient(t *testing.T) *redis.Client {
	t.Helper()
	srv := testsvc.StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	return c
}

func agreePair(t *testing.T, c *redis.Client, prefix string, limits ...limiter.Limit) (mem, red *limiter.Limiter) {
	t.Helper()
	var err error
	if mem, err = limiter.New(limits, nil); err != nil {
		t.Fatal(err)
	}
	s := New(c, &Options{Prefix: prefix, ClientTime: true, Timeout: 10 * time.Second, Lease: 24 * time.Hour})
	if red, err = limiter.New(limits, &limiter.Options{Store: s}); err != nil {
		t.Fatal(err)
	}
	return mem, red
}

func agreeOutcome(d limiter.Decision) string {
	if d.Err != nil {
		return "error: " + d.Err.Error()
	}
	if d.Allowed {
		return "allowed"
	}
	return fmt.Sprintf("denied by %v, retry %v", d.Limit, d.RetryAfter)
}

// TestMemoryAndRedisAgree runs one random sequence of calls, refunds,
// releases and times (forwards and sometimes backwards) against the
// in-memory store and the Redis store and compares every decision. Limits and costs are chosen
// so that every increment is a whole number of microseconds.
func TestMemoryAndRedisAgree(t *testing.T) {
	c := agreeClient(t)
	limits := []limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 4, Window: 2 * time.Second},
		{Kind: limiter.Rate, Scope: limiter.User, Max: 10, Window: 5 * time.Second},
		{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: 10 * time.Second},
		{Kind: limiter.Spend, Scope: limiter.Global, Tool: "refund", Max: 20, Window: 20 * time.Second},
		{Kind: limiter.Concurrency, Scope: limiter.User, Max: 2},
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 5},
	}
	mem, red := agreePair(t, c, "agree:", limits...)
	rng := rand.New(rand.NewPCG(agreeSeed, 2))
	ctx := context.Background()
	type pair struct {
		m, r     limiter.Decision
		refunded bool
	}
	// Refunds draw from their own source, so that the sequence of calls
	// stays the one it was before refunds existed.
	refunds := rand.New(rand.NewPCG(agreeSeed, 3))
	var held []pair
	at := time.Duration(0)
	costs := []float64{0, 0.5, 1, 2, 5, 11, 25}
	for i := range 3000 {
		switch x := rng.IntN(10); {
		case x < 5:
			at += time.Duration(rng.IntN(400)) * time.Millisecond
		case x == 5:
			at -= time.Duration(rng.IntN(300)) * time.Millisecond
		}
		if len(held) > 0 && refunds.IntN(4) == 0 {
			// Refund an allowed call not refunded yet, at the current time.
			j := refunds.IntN(len(held))
			if !held[j].refunded {
				now := agreeT0.Add(at)
				em, er := mem.Refund(ctx, now, held[j].m), red.Refund(ctx, now, held[j].r)
				if em != nil || er != nil {
					t.Fatalf("step %d at t0%+v: refund: memory %v, redis %v", i, at, em, er)
				}
				held[j].refunded = true
			}
		}
		if len(held) > 0 && rng.IntN(3) == 0 {
			j := rng.IntN(len(held))
			mem.Release(held[j].m)
			red.Release(held[j].r)
			held = append(held[:j], held[j+1:]...)
		}
		tool := "read"
		if rng.IntN(3) == 0 {
			tool = "refund"
		}
		r := limiter.Request{
			Session: "s" + strconv.Itoa(rng.IntN(4)),
			User:    "u" + strconv.Itoa(rng.IntN(2)),
			Tool:    tool,
			Calls:   rng.IntN(2),
			Cost:    costs[rng.IntN(len(costs))],
		}
		now := agreeT0.Add(at)
		dm, dr := mem.AllowAt(ctx, now, r), red.AllowAt(ctx, now, r)
		if om, or := agreeOutcome(dm), agreeOutcome(dr); om != or {
			t.Fatalf("step %d at t0%+v, %+v: memory %s, redis %s", i, at, r, om, or)
		}
		if dm.Allowed {
			held = append(held, pair{m: dm, r: dr})
		}
	}
}

var agreeSeed uint64 = 1
