package redislimit_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
	"github.com/redis/go-redis/v9"
)

// r64cReplicas returns two limiters, each with its own client and store,
// sharing one Redis under prefix, as two replicas of a server would.
func r64cReplicas(t *testing.T, addr, prefix string, limits ...limiter.Limit) [2]*limiter.Limiter {
	t.Helper()
	var ls [2]*limiter.Limiter
	for i := range ls {
		c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 16, MaxRetries: -1, ContextTimeoutEnabled: true})
		t.Cleanup(func() { c.Close() })
		ls[i] = newLimiter(t, redislimit.New(c, &redislimit.Options{Prefix: prefix, Timeout: time.Second}), nil, limits...)
	}
	return ls
}

// TestReview64cRedisSlotsUnderCancel races calls on two replicas sharing
// Redis, a good share of them with contexts cancelled before the call or
// while Redis decides (so that the limiter abandons their leases), with
// refunds and double releases: the calls running at once never pass the
// global and per-user caps, and once every call has ended (and the
// abandons have run) a full set of calls at the global cap gets in.
func TestReview64cRedisSlotsUnderCancel(t *testing.T) {
	srv := testsvc.StartRedis(t)
	const gmax, umax = 3, 2
	ls := r64cReplicas(t, srv.Addr, "r64c:slots:",
		limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.Global, Max: gmax},
		limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.User, Max: umax},
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 10000, Window: time.Second},
	)
	var mu sync.Mutex
	running, users := 0, map[string]int{}
	var admitted, cancelled atomic.Int32
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 64))
			for range 60 {
				l := ls[rng.IntN(2)]
				u := "u" + strconv.Itoa(rng.IntN(3))
				ctx, cancel := context.WithCancel(context.Background())
				switch rng.IntN(4) {
				case 0:
					cancel()
				case 1:
					time.AfterFunc(time.Duration(rng.IntN(300))*time.Microsecond, cancel)
				}
				d := l.AllowAt(ctx, time.Now(), limiter.Request{Session: "s" + strconv.Itoa(g), User: u, Calls: 1})
				if d.Err != nil {
					cancelled.Add(1)
				}
				if d.Allowed {
					admitted.Add(1)
					mu.Lock()
					running++
					users[u]++
					if running > gmax || users[u] > umax {
						t.Errorf("%d calls running, %d of user %s; caps %d, %d", running, users[u], u, gmax, umax)
					}
					mu.Unlock()
					time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
					if rng.IntN(3) == 0 {
						if err := l.Refund(context.Background(), time.Now(), d); err != nil {
							t.Errorf("Refund: %v", err)
						}
					}
					mu.Lock()
					running--
					users[u]--
					mu.Unlock()
				}
				l.Release(d)
				if rng.IntN(5) == 0 {
					l.Release(d)
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d admitted, %d undecided", admitted.Load(), cancelled.Load())
	// The abandons run in the background: give them their first tries.
	deadline := time.Now().Add(3 * time.Second)
	for {
		var ds []limiter.Decision
		for i := range gmax {
			d := ls[i%2].AllowAt(context.Background(), time.Now(), limiter.Request{Session: "x", User: "v" + strconv.Itoa(i), Calls: 1})
			if d.Allowed {
				ds = append(ds, d)
			}
		}
		for i, d := range ds {
			ls[i%2].Release(d)
		}
		if len(ds) == gmax {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("3 s after every call ended, %d of %d calls at the global cap get in", len(ds), gmax)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReview64cRedisRetryAfterAcrossReplicas: a refusal's RetryAfter is
// true across replicas: a call one replica refused for spend, retried on
// the other after RetryAfter, is admitted, and a refund on one replica is
// seen by the other at once.
func TestReview64cRedisRetryAfterAcrossReplicas(t *testing.T) {
	srv := testsvc.StartRedis(t)
	ls := r64cReplicas(t, srv.Addr, "r64c:retry:",
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.User, Max: 4, Window: 400 * time.Millisecond},
		limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: 300 * time.Millisecond},
	)
	ctx := context.Background()
	r := func(cost float64) limiter.Request { return limiter.Request{User: "u", Calls: 1, Cost: cost} }
	for round := range 3 {
		// Spend: 3 calls of 3; the fourth waits for 2 units.
		for i := range 3 {
			if d := ls[i%2].AllowAt(ctx, time.Now(), r(3)); !d.Allowed {
				t.Fatalf("round %d: call %d refused: %+v", round, i, d)
			}
		}
		d := ls[1].AllowAt(ctx, time.Now(), r(3))
		if d.Allowed || d.RetryAfter <= 0 {
			t.Fatalf("round %d: fourth call %+v; want a refusal with a wait", round, d)
		}
		time.Sleep(d.RetryAfter)
		d2 := ls[0].AllowAt(ctx, time.Now(), r(3))
		if !d2.Allowed {
			t.Errorf("round %d: retried after the %v %v said, refused by %v (wait %v)", round, d.RetryAfter, d.Limit.Kind, d2.Limit.Kind, d2.RetryAfter)
		}
		// A refund on one replica is seen by the other.
		if err := ls[0].Refund(ctx, time.Now(), d2); err != nil {
			t.Fatal(err)
		}
		if d3 := ls[1].AllowAt(ctx, time.Now(), limiter.Request{User: "u", Calls: 0, Cost: 3}); !d3.Allowed {
			t.Errorf("round %d: after a refund on the other replica, refused: %+v", round, d3)
		}
		time.Sleep(500 * time.Millisecond) // both buckets full again
	}
}
