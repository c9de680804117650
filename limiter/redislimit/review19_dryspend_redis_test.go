package redislimit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
)

// TestDryRunPeeks checks that the Redis store checks a dry run's cost
// against the spend limits, at the server's time, without taking it or
// writing anything for it: a dry run over what is left is denied as the
// real call is, one that fits leaves the budget as it was (and makes no
// key), and real calls on two replicas fill the budget exactly while dry
// runs run alongside. Before, the store did not peek, so the limiter sent
// it no spend check for a dry run, which was never denied.
func TestDryRunPeeks(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	s := redislimit.New(c, &redislimit.Options{Timeout: testTimeout})
	if ps, ok := any(s).(limiter.PeekStore); !ok || !ps.Peeks() {
		t.Fatalf("%T is not a PeekStore whose Peeks reports true", s)
	}
	spend := limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour}
	l := newLimiter(t, s, nil, spend)
	ctx := context.Background()
	ask := func(cost float64, dry bool) limiter.Decision {
		t.Helper()
		d := l.AllowAt(ctx, time.Now(), limiter.Request{User: "u", Calls: 1, Cost: cost, DryRun: dry})
		if d.Err != nil {
			t.Fatalf("AllowAt: %v", d.Err)
		}
		l.Release(d)
		return d
	}
	// On a fresh key, a dry run that fits writes nothing.
	if d := ask(10, true); !d.Allowed {
		t.Fatalf("dry run of 10 of 10: %+v", d)
	}
	key := s.Key(limiter.Check{ID: spend.ID(), Key: "u"})
	if n, err := c.Exists(ctx, key).Result(); err != nil || n != 0 {
		t.Errorf("EXISTS %s after a dry run = %d, %v; want 0", key, n, err)
	}
	if d := ask(7, false); !d.Allowed {
		t.Fatalf("real call of 7: %+v", d)
	}
	d := ask(5, true)
	if d.Allowed || d.Limit.Kind != limiter.Spend || d.RetryAfter < 719*time.Second || d.RetryAfter > 720*time.Second {
		t.Errorf("dry run of 5 with 3 left: %+v, want denied by spend after about 720s", d)
	}
	if d := ask(11, true); d.Allowed || d.Limit.Kind != limiter.Spend || d.RetryAfter != 0 {
		t.Errorf("dry run of 11 of 10: %+v, want denied by spend, no wait", d)
	}
	ttl, _ := c.PTTL(ctx, key).Result()
	for range 3 {
		if d := ask(2.9, true); !d.Allowed {
			t.Errorf("dry run of 2.9 with 3 left: %+v", d)
		}
	}
	if ttl2, _ := c.PTTL(ctx, key).Result(); ttl2 > ttl {
		t.Errorf("PTTL of the bucket grew from %v to %v over dry runs", ttl, ttl2)
	}
	if d := ask(2.9, false); !d.Allowed {
		t.Errorf("real call of 2.9 after the dry runs: %+v", d)
	}
	if d := ask(0.2, true); d.Allowed {
		t.Errorf("dry run of 0.2 with about 0.1 left: allowed")
	}
}

// TestDryRunNeverFailsARealCallOnReplicas runs real calls on two
// replicas that fill a spend budget exactly while dry runs run on both.
func TestDryRunNeverFailsARealCallOnReplicas(t *testing.T) {
	srv := testsvc.StartRedis(t)
	spend := limiter.Limit{Kind: limiter.Spend, Scope: limiter.Global, Max: 40, Window: 1000 * time.Hour}
	var replicas [2]*limiter.Limiter
	for i := range replicas {
		replicas[i] = newLimiter(t, redislimit.New(newClient(t, srv.Addr), &redislimit.Options{Timeout: testTimeout}), nil, spend)
	}
	ctx := context.Background()
	stop := make(chan struct{})
	var dry, real sync.WaitGroup
	for g := range 4 {
		dry.Add(1)
		go func() {
			defer dry.Done()
			l := replicas[g%2]
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if d := l.AllowAt(ctx, time.Now(), limiter.Request{Cost: float64(1 + (g+i)%40), DryRun: true}); d.Err != nil {
					t.Errorf("dry run: %v", d.Err)
					return
				}
			}
		}()
	}
	for g := range 8 {
		real.Add(1)
		go func() {
			defer real.Done()
			for range 5 {
				if d := replicas[g%2].AllowAt(ctx, time.Now(), limiter.Request{Cost: 1}); !d.Allowed {
					t.Errorf("a real call within the budget was denied: %+v", d)
				}
			}
		}()
	}
	real.Wait()
	close(stop)
	dry.Wait()
	if d := replicas[0].AllowAt(ctx, time.Now(), limiter.Request{Cost: 1, DryRun: true}); d.Allowed {
		t.Errorf("dry run once the budget is spent: allowed")
	}
}

// TestDryRunStoreDown checks that a dry run the store cannot decide is
// denied as a real write is (fail closed), and reports the failure.
func TestDryRunStoreDown(t *testing.T) {
	srv := testsvc.StartRedis(t)
	s := redislimit.New(newClient(t, srv.Addr), &redislimit.Options{Timeout: testTimeout})
	l := newLimiter(t, s, nil, limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour})
	srv.Stop()
	d := l.AllowAt(context.Background(), time.Now(), limiter.Request{User: "u", Cost: 1, Write: true, DryRun: true})
	if d.Allowed || d.Err == nil {
		t.Errorf("dry run with redis down: %+v, want denied with an error", d)
	}
}
