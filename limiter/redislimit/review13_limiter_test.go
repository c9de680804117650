package redislimit_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
	"github.com/redis/go-redis/v9"
)

// cutProxy is a TCP proxy in front of a real Redis whose link can be cut,
// as a network partition or a Redis failover does: while cut, open
// connections are closed and new ones are closed at once. Its backend can
// be switched to another server, as a Redis restart without persistence
// comes back empty.
type cutProxy struct {
	ln      net.Listener
	mu      sync.Mutex
	backend string
	cut     bool
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

func newCutProxy(t *testing.T, backend string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, backend: backend, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.setCut(true)
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) Addr() string { return p.ln.Addr().String() }

func (p *cutProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut, backend := p.cut, p.backend
		p.mu.Unlock()
		if cut {
			c.Close()
			continue
		}
		b, err := net.Dial("tcp", backend)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[b] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		pipe := func(dst, src net.Conn) {
			defer p.wg.Done()
			io.Copy(dst, src)
			dst.Close()
			src.Close()
		}
		go pipe(b, c)
		go pipe(c, b)
	}
}

// setCut cuts (closing every open connection) or restores the link.
func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
}

func (p *cutProxy) setBackend(addr string) {
	p.mu.Lock()
	p.backend = addr
	p.mu.Unlock()
}

// TestReview13ReleaseDuringOutageFreesSlot: a Release that cannot reach
// Redis (the link is cut at that moment) is not lost for the whole lease.
// Under a per-user limit of one call in flight, a blip at the end of one
// call locked the user out for the lease (5 minutes by default); the
// limiter now sends the release again in the background, as it does for a
// failed reservation, and the slot is free within seconds of the link
// coming back.
func TestReview13ReleaseDuringOutageFreesSlot(t *testing.T) {
	srv := testsvc.StartRedis(t)
	p := newCutProxy(t, srv.Addr)
	c := newClient(t, p.Addr())
	s := redislimit.New(c, &redislimit.Options{Timeout: 2 * time.Second})
	l := newLimiter(t, s, nil, limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1})
	ctx := context.Background()
	req := limiter.Request{User: "alice", Calls: 1}
	d := l.AllowAt(ctx, time.Now(), req)
	if !d.Allowed {
		t.Fatalf("first call: %+v", d)
	}
	p.setCut(true)
	l.Release(d)
	if d := l.AllowAt(ctx, time.Now(), req); d.Allowed || d.Err == nil {
		t.Fatalf("call while the link is cut: allowed=%v err=%v, want denied with a store error", d.Allowed, d.Err)
	}
	time.Sleep(100 * time.Millisecond)
	p.setCut(false)

	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		d := l.AllowAt(ctx, time.Now(), req)
		if d.Allowed {
			l.Release(d)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10s after the link came back: denied by %v (err %v); the released slot is held until its lease expires", d.Limit, d.Err)
		}
	}
	// Only one slot came back: Max is still 1.
	d1 := l.AllowAt(ctx, time.Now(), req)
	defer l.Release(d1)
	if d2 := l.AllowAt(ctx, time.Now(), req); d2.Allowed {
		l.Release(d2)
		t.Errorf("two calls in flight under a limit of 1 after the retried release")
	}
}

// TestReview13RestartAndScriptFlush: Redis loses its script cache (SCRIPT
// FLUSH, or a restart): the next decision runs EVALSHA, gets NOSCRIPT and
// falls back to EVAL, is decided once (not charged twice) and keeps the
// state. While Redis is unreachable every decision fails closed; when it
// comes back empty (a restart without persistence), decisions work again.
func TestReview13RestartAndScriptFlush(t *testing.T) {
	srv := testsvc.StartRedis(t)
	p := newCutProxy(t, srv.Addr)
	c := newClient(t, p.Addr())
	info := newClient(t, srv.Addr)
	l := newLimiter(t, redislimit.New(c, &redislimit.Options{Timeout: 2 * time.Second}), nil,
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.User, Max: 3, Window: time.Hour},
		limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 10},
	)
	ctx := context.Background()
	req := limiter.Request{User: "u", Calls: 1}
	allow := func(want bool) {
		t.Helper()
		d := l.AllowAt(ctx, time.Now(), req)
		l.Release(d)
		if d.Allowed != want || d.Err != nil {
			t.Fatalf("AllowAt: allowed=%v limit=%v err=%v, want allowed=%v and no error", d.Allowed, d.Limit, d.Err, want)
		}
	}
	allow(true)
	allow(true)
	if err := info.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	before := commandStats(t, info)
	allow(true) // the third of 3: EVALSHA, NOSCRIPT, EVAL
	after := commandStats(t, info)
	if ev := after["eval"] - before["eval"]; ev != 1 {
		t.Errorf("after SCRIPT FLUSH, one decision and its release ran EVAL %d times, want 1", ev)
	}
	allow(false) // charged once: the budget of 3 is spent, not 4

	// An outage: fail closed, with the store's error.
	p.setCut(true)
	d := l.AllowAt(ctx, time.Now(), limiter.Request{User: "other", Calls: 1})
	if d.Allowed || d.Err == nil {
		t.Fatalf("while Redis is unreachable: allowed=%v err=%v, want denied with a store error", d.Allowed, d.Err)
	}
	// Redis comes back empty: no script, no state.
	srv2 := testsvc.StartRedis(t)
	p.setBackend(srv2.Addr)
	p.setCut(false)
	allow(true)
}

// TestReview13CallerClockSkewIgnored: two replicas whose clocks are an
// hour apart (each passes its own now) share one budget exactly, and the
// wait they are told is the server's, not their skew: the script reads
// Redis TIME.
func TestReview13CallerClockSkewIgnored(t *testing.T) {
	srv := testsvc.StartRedis(t)
	lim := limiter.Limit{Kind: limiter.Rate, Scope: limiter.Global, Max: 3, Window: time.Minute}
	ahead := newLimiter(t, redislimit.New(newClient(t, srv.Addr), &redislimit.Options{Timeout: testTimeout}), nil, lim)
	behind := newLimiter(t, redislimit.New(newClient(t, srv.Addr), &redislimit.Options{Timeout: testTimeout}), nil, lim)
	ctx := context.Background()
	r := limiter.Request{Calls: 1}
	var got []bool
	for _, l := range []*limiter.Limiter{ahead, behind, ahead, behind, ahead} {
		now := time.Now().Add(time.Hour)
		if l == behind {
			now = time.Now().Add(-time.Hour)
		}
		d := l.AllowAt(ctx, now, r)
		got = append(got, d.Allowed)
		if !d.Allowed && (d.RetryAfter <= 0 || d.RetryAfter > 20*time.Second) {
			t.Errorf("denied with retry %v, want at most 20s (one call of 3 per minute, at the server's time)", d.RetryAfter)
		}
	}
	want := []bool{true, true, true, false, false}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("calls from clocks an hour apart: %v, want %v", got, want)
		}
	}
}

// startCluster starts a one-node Redis Cluster (testsvc.StartRedisCluster)
// and returns a cluster client for it. CROSSSLOT is enforced there as on
// any cluster.
func startCluster(t *testing.T) *redis.ClusterClient {
	t.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{testsvc.StartRedisCluster(t)}})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestReview13ClusterHashTags runs the store on Redis Cluster. With the
// default prefix every key of a decision shares the prefix's hash tag, so
// keys chosen by callers, braces and all, neither break decisions nor split
// a bucket; a prefix without a hash tag makes Redis refuse multi-key
// decisions (CROSSSLOT), and the limiter fails closed.
func TestReview13ClusterHashTags(t *testing.T) {
	c := startCluster(t)
	limits := []limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 1, Window: time.Minute},
		{Kind: limiter.Rate, Scope: limiter.User, Max: 2, Window: time.Minute},
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 100},
	}
	ctx := context.Background()
	l := newLimiter(t, redislimit.New(c, &redislimit.Options{Timeout: testTimeout}), nil, limits...)
	for _, k := range []string{"{x}", "}{", "{", "}", "{}", "a{b}c", ""} {
		r := limiter.Request{Session: k, User: "user" + k, Calls: 1}
		d := l.AllowAt(ctx, time.Now(), r)
		l.Release(d)
		if !d.Allowed || d.Err != nil {
			t.Errorf("session %q, first call: allowed=%v limit=%v err=%v, want allowed", k, d.Allowed, d.Limit, d.Err)
		}
		d = l.AllowAt(ctx, time.Now(), r)
		l.Release(d)
		if d.Allowed || d.Err != nil || d.Limit.Scope != limiter.Session {
			t.Errorf("session %q, second call: allowed=%v limit=%v err=%v, want denied by the session limit", k, d.Allowed, d.Limit, d.Err)
		}
	}

	bad := newLimiter(t, redislimit.New(c, &redislimit.Options{Prefix: "mcp:", Timeout: testTimeout}), nil, limits[:2]...)
	d := bad.AllowAt(ctx, time.Now(), limiter.Request{Session: "s", User: "u", Calls: 1})
	bad.Release(d)
	if d.Allowed || d.Err == nil || !strings.Contains(d.Err.Error(), "CROSSSLOT") {
		t.Errorf("prefix without a hash tag: allowed=%v err=%v, want denied with a CROSSSLOT store error", d.Allowed, d.Err)
	}
}

// resendAcquires is a Store that sends every reservation twice, as go-redis
// does when the reply to the first sending is lost (Redis ran the script
// the first time), and reports the second outcome.
type resendAcquires struct{ *redislimit.Store }

func (r resendAcquires) Apply(ctx context.Context, now time.Time, b *limiter.Batch) error {
	if !b.Release && !b.Refund {
		first := *b
		if err := r.Store.Apply(ctx, now, &first); err != nil {
			return err
		}
	}
	return r.Store.Apply(ctx, now, b)
}

// TestReview13ResentAcquireGivesNothingAway: a reservation that reaches
// Redis twice is, with an in-flight slot, carried out once; without one,
// its calls are taken twice. Either way no call is let through beyond a
// cap, and the slot is one slot.
func TestReview13ResentAcquireGivesNothingAway(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	ctx := context.Background()
	count := func(l *limiter.Limiter, user string) int {
		n := 0
		for range 10 {
			d := l.AllowAt(ctx, time.Now(), limiter.Request{User: user, Calls: 1})
			if d.Err != nil {
				t.Fatalf("AllowAt: %v", d.Err)
			}
			if d.Allowed {
				n++
			}
			l.Release(d)
		}
		return n
	}
	rate := limiter.Limit{Kind: limiter.Rate, Scope: limiter.User, Max: 4, Window: time.Hour}
	conc := limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}

	withSlot := newLimiter(t, resendAcquires{redislimit.New(c, &redislimit.Options{Prefix: "r13a:", Timeout: testTimeout})}, nil, rate, conc)
	if got := count(withSlot, "u"); got != 4 {
		t.Errorf("with an in-flight slot, resent acquires: %d of 10 calls allowed, want 4 (each carried out once)", got)
	}
	without := newLimiter(t, resendAcquires{redislimit.New(c, &redislimit.Options{Prefix: "r13b:", Timeout: testTimeout})}, nil, rate)
	if got := count(without, "u"); got != 2 {
		t.Errorf("without a slot, resent acquires: %d of 10 calls allowed, want 2 (each charged twice, never more than 4 in all)", got)
	}
	// One slot held: the resent acquire took no second one, and holds no
	// other user's.
	held := newLimiter(t, resendAcquires{redislimit.New(c, &redislimit.Options{Prefix: "r13c:", Timeout: testTimeout})}, nil, conc)
	d := held.AllowAt(ctx, time.Now(), limiter.Request{User: "v"})
	if d2 := held.AllowAt(ctx, time.Now(), limiter.Request{User: "v"}); d2.Allowed {
		t.Errorf("a second call in flight under a limit of 1")
	}
	held.Release(d)
	if d3 := held.AllowAt(ctx, time.Now(), limiter.Request{User: "v"}); !d3.Allowed {
		t.Errorf("after the release: denied by %v (err %v); the resent acquire held a second slot", d3.Limit, d3.Err)
	} else {
		held.Release(d3)
	}
}
