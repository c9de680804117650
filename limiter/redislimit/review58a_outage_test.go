package redislimit_test

import (
	"context"
	"io"
	"net"
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

// partition is a TCP proxy in front of a Redis that can cut the network
// (every connection through it ends, and new ones end at once) and heal it,
// as a network partition or a Redis restarted with its data does: unlike a
// paused Redis, nothing sent during the cut is run later.
type partition struct {
	ln   net.Listener
	down atomic.Bool
	mu   sync.Mutex
	open map[net.Conn]bool
}

func newPartition(t *testing.T, addr string) *partition {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &partition{ln: ln, open: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if p.down.Load() {
				c.Close()
				continue
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.open[c], p.open[s] = true, true
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close(); c.Close() }()
			go func() { io.Copy(c, s); s.Close(); c.Close() }()
		}
	}()
	return p
}

func (p *partition) cut() {
	p.down.Store(true)
	p.mu.Lock()
	for c := range p.open {
		c.Close()
	}
	clear(p.open)
	p.mu.Unlock()
}

func (p *partition) heal() { p.down.Store(false) }

// TestReview58aReleaseDuringOutageRetried checks the promise of
// Limiter.Release: a release that cannot reach a leasing store is sent
// again in the background for about 13 seconds. During an outage every
// failed reservation with a slot starts an abandon too; once 64 of those
// run (a few seconds of traffic), the release of a call that ends during
// the outage is not retried at all, and when Redis is back its slot stays
// held for the whole lease (5 minutes): a user capped at one call in
// flight is refused CONCURRENCY_LIMIT_EXCEEDED with nothing in flight.
func TestReview58aReleaseDuringOutageRetried(t *testing.T) {
	srv := testsvc.StartRedis(t)
	p := newPartition(t, srv.Addr)
	c := redis.NewClient(&redis.Options{
		Addr: p.ln.Addr().String(), PoolSize: 8, MaxRetries: -1,
		ContextTimeoutEnabled: true, Protocol: 2, DisableIdentity: true,
	})
	t.Cleanup(func() { c.Close() })
	s := redislimit.New(c, &redislimit.Options{Timeout: 100 * time.Millisecond})
	l := newLimiter(t, s, nil, limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1})
	ctx := context.Background()
	alice := limiter.Request{User: "alice", Calls: 1}
	d := l.AllowAt(ctx, time.Now(), alice)
	if !d.Allowed {
		t.Fatalf("alice's call before the outage: %+v", d)
	}

	p.cut()
	// Other users' calls during the outage: refused (fail closed), each
	// abandoning its lease in the background.
	for i := range 70 {
		if o := l.AllowAt(ctx, time.Now(), limiter.Request{User: "u" + strconv.Itoa(i), Calls: 1}); o.Allowed || o.Err == nil {
			t.Fatalf("call %d during the outage: %+v, want a store failure", i, o)
		}
	}
	l.Release(d) // alice's call ends during the outage
	time.Sleep(100 * time.Millisecond)
	p.heal()

	var d2 limiter.Decision
	for deadline := time.Now().Add(3500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if d2 = l.AllowAt(ctx, time.Now(), alice); d2.Allowed {
			break
		}
	}
	if !d2.Allowed {
		t.Errorf("alice's call after Redis came back: allowed %v, limit %v, err %v; want allowed: "+
			"her only call ended during the outage, but its release was never retried "+
			"(the abandons of failed reservations took every place), so its slot is held for the lease",
			d2.Allowed, d2.Limit, d2.Err)
	}
	l.Release(d2)
}

// stall is a TCP proxy in front of a Redis that can stall (hold what the
// clients send, as a Redis busy with a fork, a slow fsync or a slow script
// leaves it in its sockets) and catch up (pass it all on, including what
// clients sent before they gave up and closed their connections, which
// Redis then runs).
type stall struct {
	ln      net.Listener
	mu      sync.Mutex
	cond    *sync.Cond
	stalled bool
}

func newStall(t *testing.T, addr string) *stall {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stall{ln: ln}
	p.cond = sync.NewCond(&p.mu)
	var wg sync.WaitGroup
	var conns sync.Map
	t.Cleanup(func() {
		ln.Close()
		p.catchUp()
		conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			conns.Store(c, true)
			conns.Store(s, true)
			wg.Add(2)
			go func() {
				defer wg.Done()
				buf := make([]byte, 64<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						p.mu.Lock()
						for p.stalled {
							p.cond.Wait()
						}
						p.mu.Unlock()
						if _, werr := s.Write(buf[:n]); werr != nil {
							break
						}
					}
					if err != nil {
						break
					}
				}
				s.(*net.TCPConn).CloseWrite()
			}()
			go func() {
				defer wg.Done()
				io.Copy(c, s)
				c.Close()
				s.Close()
			}()
		}
	}()
	return p
}

func (p *stall) pause() {
	p.mu.Lock()
	p.stalled = true
	p.mu.Unlock()
}

func (p *stall) catchUp() {
	p.mu.Lock()
	p.stalled = false
	p.cond.Broadcast()
	p.mu.Unlock()
}

// TestReview58aStallLeaksNoSlots checks the promise of the package doc: a
// decision that timed out may still be applied by Redis, and the limiter
// then abandons its lease in the background, "which frees its in-flight
// slots within seconds". A Redis that stalls for a moment (a fork, a slow
// fsync) while 80 calls come in times out 80 decisions, sent on the pool's
// ready connections and all applied once it catches up; the limiter
// abandons only 64 of them (maxAbandons), and the slots of the others stay
// held for the whole lease (5 minutes), with no call in flight: 16 users
// capped at one call in flight are refused for 5 minutes.
func TestReview58aStallLeaksNoSlots(t *testing.T) {
	srv := testsvc.StartRedis(t)
	p := newStall(t, srv.Addr)
	c := redis.NewClient(&redis.Options{
		Addr: p.ln.Addr().String(), PoolSize: 200, MaxRetries: -1,
		ContextTimeoutEnabled: true, Protocol: 2, DisableIdentity: true,
	})
	t.Cleanup(func() { c.Close() })
	s := redislimit.New(c, &redislimit.Options{Timeout: 200 * time.Millisecond})
	l := newLimiter(t, s, nil, limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1})
	ctx := context.Background()
	if w := l.AllowAt(ctx, time.Now(), limiter.Request{User: "warm"}); !w.Allowed {
		t.Fatalf("warm-up: %+v", w)
	} else {
		l.Release(w)
	}
	// A busy server's pool holds connections ready: made here by
	// commands that hold one each for a moment.
	var warm sync.WaitGroup
	for range 100 {
		warm.Add(1)
		go func() {
			defer warm.Done()
			c.Do(ctx, "BLPOP", "review58a-none", "0.2")
		}()
	}
	warm.Wait()
	if n := c.PoolStats().IdleConns; n < 90 {
		t.Fatalf("%d idle connections, want 100", n)
	}
	const users = 80
	p.pause()
	var wg sync.WaitGroup
	for i := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if d := l.AllowAt(ctx, time.Now(), limiter.Request{User: "u" + strconv.Itoa(i)}); d.Allowed {
				t.Errorf("call %d while Redis stalled: %+v, want a store failure", i, d)
			}
		}()
	}
	wg.Wait()
	p.catchUp()
	locked := map[int]bool{}
	for i := range users {
		locked[i] = true
	}
	for deadline := time.Now().Add(3 * time.Second); len(locked) > 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for i := range locked {
			if d := l.AllowAt(ctx, time.Now(), limiter.Request{User: "u" + strconv.Itoa(i)}); d.Allowed {
				l.Release(d)
				delete(locked, i)
			}
		}
	}
	if len(locked) > 0 {
		t.Errorf("%d of %d users refused with nothing in flight after a stall of Redis: the slots "+
			"of their timed-out calls, applied late, were never abandoned and are held for the lease",
			len(locked), users)
	}
}
