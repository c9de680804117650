package redislimit_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/limitertest"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
	"github.com/redis/go-redis/v9"
)

func newClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 16})
	t.Cleanup(func() { c.Close() })
	return c
}

func newLimiter(t testing.TB, s limiter.Store, opts *limiter.Options, limits ...limiter.Limit) *limiter.Limiter {
	t.Helper()
	if opts == nil {
		opts = &limiter.Options{}
	}
	opts.Store = s
	l, err := limiter.New(limits, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestConformance(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	n := 0
	limitertest.Run(t, func(t *testing.T) limiter.Store {
		n++
		return redislimit.New(c, &redislimit.Options{Prefix: "kit" + strconv.Itoa(n) + ":", ClientTime: true, Timeout: testTimeout})
	})
}

// TestReplicasShareLimitsExactly runs two limiters, each with its own Redis
// client and store as two replicas would, against one server, at the
// server's time.
func TestReplicasShareLimitsExactly(t *testing.T) {
	srv := testsvc.StartRedis(t)
	limits := []limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Max: 60, Window: time.Hour},
		{Kind: limiter.Spend, Scope: limiter.Session, Max: 1000, Window: time.Hour},
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 32},
	}
	var replicas [2]*limiter.Limiter
	for i := range replicas {
		replicas[i] = newLimiter(t, redislimit.New(newClient(t, srv.Addr), &redislimit.Options{Timeout: testTimeout}), nil, limits...)
	}
	const goroutines, calls = 8, 20
	var ok atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := replicas[g%2]
			for range calls {
				d := l.AllowAt(context.Background(), time.Now(), limiter.Request{Session: "s" + strconv.Itoa(g), User: "u", Calls: 1, Cost: 1})
				if d.Err != nil {
					t.Errorf("AllowAt: %v", d.Err)
				}
				if d.Allowed {
					ok.Add(1)
				}
				l.Release(d)
			}
		}()
	}
	wg.Wait()
	if got := ok.Load(); got != 60 {
		t.Errorf("%d of %d calls allowed across two replicas, want exactly 60", got, goroutines*calls)
	}

	// In-flight slots held across both replicas: exactly 32.
	var mu sync.Mutex
	var held []limiter.Decision
	var heldBy []int
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				d := replicas[g%2].AllowAt(context.Background(), time.Now(), limiter.Request{User: "v"})
				if d.Allowed {
					mu.Lock()
					held, heldBy = append(held, d), append(heldBy, g%2)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(held) != 32 {
		t.Errorf("%d slots held across two replicas, want exactly 32", len(held))
	}
	for i, d := range held {
		replicas[heldBy[i]].Release(d)
	}
	if d := replicas[0].AllowAt(context.Background(), time.Now(), limiter.Request{User: "v"}); !d.Allowed {
		t.Errorf("after releasing every slot: denied (%v, %v)", d.Limit, d.Err)
	}
}

// TestServerTimeRetryAfter checks retry-after at the Redis server's clock: a
// retry after the given delay succeeds.
func TestServerTimeRetryAfter(t *testing.T) {
	srv := testsvc.StartRedis(t)
	l := newLimiter(t, redislimit.New(newClient(t, srv.Addr), &redislimit.Options{Timeout: testTimeout}), nil,
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 2, Window: 400 * time.Millisecond})
	r := limiter.Request{Session: "a", Calls: 1}
	ctx := context.Background()
	for i := range 2 {
		if d := l.AllowAt(ctx, time.Time{}, r); !d.Allowed {
			t.Fatalf("call %d denied: %v %v", i, d.Limit, d.Err)
		}
	}
	d := l.AllowAt(ctx, time.Time{}, r)
	if d.Allowed || d.Limit.Kind != limiter.Rate || d.RetryAfter <= 0 || d.RetryAfter > 200*time.Millisecond {
		t.Fatalf("third call: allowed=%v limit=%v retry=%v err=%v, want a rate denial within 200ms", d.Allowed, d.Limit, d.RetryAfter, d.Err)
	}
	time.Sleep(d.RetryAfter)
	if d := l.AllowAt(ctx, time.Time{}, r); !d.Allowed {
		t.Errorf("retry after %v: denied, retry %v", d.RetryAfter, d.RetryAfter)
	}
}

// TestOneRoundTrip counts what Redis executed for a run of decisions with
// three scopes and releases: one EVALSHA each and no other command from the
// client.
func TestOneRoundTrip(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	var sent atomic.Int64
	c.AddHook(countHook{&sent})
	l := newLimiter(t, redislimit.New(c, &redislimit.Options{Timeout: testTimeout}), nil,
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 1e6, Window: time.Minute},
		limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 1e6, Window: time.Minute},
		limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 100},
	)
	ctx := context.Background()
	r := limiter.Request{Session: "s", User: "u", Calls: 1, Cost: 2}
	l.Release(l.AllowAt(ctx, time.Now(), r)) // loads the script
	info := newClient(t, srv.Addr)
	before := commandStats(t, info)
	sent.Store(0)
	const n = 50
	for range n {
		d := l.AllowAt(ctx, time.Now(), r)
		if !d.Allowed {
			t.Fatalf("denied: %v %v", d.Limit, d.Err)
		}
		l.Release(d)
	}
	after := commandStats(t, info)
	got := map[string]int64{}
	for cmd, calls := range after {
		if delta := calls - before[cmd]; delta != 0 && cmd != "info" {
			got[cmd] = delta
		}
	}
	// Each decision and each release is one EVALSHA; the commands the
	// script runs inside Redis are counted too but cost no round trip.
	if got["evalsha"] != 2*n || got["eval"] != 0 {
		t.Errorf("commandstats delta %v: want evalsha=%d (one per decision and per release), eval=0", got, 2*n)
	}
	if s := sent.Load(); s != 2*n {
		t.Errorf("client sent %d commands for %d decisions and %d releases, want %d", s, n, n, 2*n)
	}
	for cmd := range got {
		switch cmd {
		case "evalsha", "time", "get", "set", "zcount", "zscore", "zremrangebyscore", "zadd", "pttl", "pexpire", "zrem":
		default:
			t.Errorf("unexpected command %q ran (%d times)", cmd, got[cmd])
		}
	}
}

type countHook struct{ n *atomic.Int64 }

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}
func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// commandStats parses INFO commandstats into calls per command.
func commandStats(t testing.TB, c *redis.Client) map[string]int64 {
	t.Helper()
	s, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int64{}
	for _, line := range strings.Split(s, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			t.Fatalf("parse %q: %v", line, err)
		}
		m[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return m
}

func TestUnavailable(t *testing.T) {
	limits := []limiter.Limit{{Kind: limiter.Rate, Scope: limiter.Session, Max: 10, Window: time.Minute}}
	read := limiter.Request{Session: "a", Calls: 1}
	write := limiter.Request{Session: "a", Calls: 1, Write: true}
	type outcome struct{ ReadAllowed, WriteAllowed bool }

	check := func(t *testing.T, c *redis.Client, opts *limiter.Options, want outcome) {
		t.Helper()
		l := newLimiter(t, redislimit.New(c, &redislimit.Options{Timeout: 100 * time.Millisecond}), opts, limits...)
		start := time.Now()
		dr := l.AllowAt(context.Background(), time.Now(), read)
		dw := l.AllowAt(context.Background(), time.Now(), write)
		if el := time.Since(start); el > 600*time.Millisecond {
			t.Errorf("two decisions took %v with a 100ms timeout", el)
		}
		if diff := cmp.Diff(want, outcome{dr.Allowed, dw.Allowed}); diff != "" {
			t.Errorf("mismatch (-want +got):\n%s", diff)
		}
		for _, d := range []limiter.Decision{dr, dw} {
			if d.Err == nil || !strings.Contains(d.Err.Error(), "store unavailable") {
				t.Errorf("Err = %v, want a store-unavailable error", d.Err)
			}
		}
		t.Logf("error reported: %v", dw.Err)
	}

	t.Run("stopped", func(t *testing.T) {
		srv := testsvc.StartRedis(t)
		c := newClient(t, srv.Addr)
		srv.Stop()
		check(t, c, nil, outcome{false, false})
		check(t, c, &limiter.Options{FailOpenReads: true}, outcome{true, false})
		check(t, c, &limiter.Options{FailOpenReads: true, FailOpenWrites: true}, outcome{true, true})
	})
	t.Run("hung", func(t *testing.T) {
		srv := testsvc.StartRedis(t)
		c := newClient(t, srv.Addr)
		if err := c.Ping(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		if err := srv.Pause(); err != nil {
			t.Fatal(err)
		}
		defer srv.Resume()
		check(t, c, nil, outcome{false, false})
		check(t, c, &limiter.Options{FailOpenReads: true}, outcome{true, false})
	})
}

// TestLeaseExpiry checks that slots never released (a crashed replica) come
// back when their lease expires.
func TestLeaseExpiry(t *testing.T) {
	srv := testsvc.StartRedis(t)
	s := redislimit.New(newClient(t, srv.Addr), &redislimit.Options{Lease: time.Minute, ClientTime: true, Timeout: testTimeout})
	l := newLimiter(t, s, nil, limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 2})
	t0 := time.Unix(1_700_000_000, 0)
	ctx := context.Background()
	var got []bool
	for _, at := range []time.Duration{0, 0, 0, 59 * time.Second, time.Minute + time.Millisecond, time.Minute + time.Millisecond, time.Minute + time.Millisecond} {
		got = append(got, l.AllowAt(ctx, t0.Add(at), limiter.Request{}).Allowed) // never released
	}
	if diff := cmp.Diff([]bool{true, true, false, false, true, true, false}, got); diff != "" {
		t.Errorf("allowed at 0, 0, 0, 59s, 60s+1ms x3 (-want +got):\n%s", diff)
	}
}

// TestIdleKeysExpire checks that rate state expires once the bucket is full
// again, so Redis memory stays bounded too.
func TestIdleKeysExpire(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	s := redislimit.New(c, &redislimit.Options{Timeout: testTimeout})
	lim := limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 10, Window: 10 * time.Second}
	l := newLimiter(t, s, nil, lim)
	ctx := context.Background()
	for i := range 3 {
		l.AllowAt(ctx, time.Now(), limiter.Request{Session: "idle", Calls: 1})
		_ = i
	}
	key := s.Key(limiter.Check{ID: lim.ID(), Key: "idle"})
	ttl, err := c.PTTL(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	// Three calls of 1s each: full again in 3s.
	if ttl <= 2*time.Second || ttl > 3*time.Second {
		t.Errorf("PTTL %s = %v, want in (2s, 3s]", key, ttl)
	}
}

// BenchmarkRedis measures one decision with two scopes against the bare
// round trips of a PING and of a trivial script, and reports the round trips
// per decision counted by Redis (INFO commandstats).
func BenchmarkRedis(b *testing.B) {
	srv := testsvc.StartRedis(b)
	c := newClient(b, srv.Addr)
	info := newClient(b, srv.Addr)
	l := newLimiter(b, redislimit.New(c, &redislimit.Options{Timeout: testTimeout}), nil,
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 1e12, Window: time.Minute},
		limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 1e12, Window: time.Minute},
	)
	ctx := context.Background()
	r := limiter.Request{Session: "s", User: "u", Calls: 1, Cost: 1}
	l.AllowAt(ctx, time.Now(), r)
	b.Run("ping_baseline", func(b *testing.B) {
		for b.Loop() {
			if err := c.Ping(ctx).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("evalsha_return_1_baseline", func(b *testing.B) {
		sha, err := c.ScriptLoad(ctx, "return 1").Result()
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if err := c.EvalSha(ctx, sha, nil).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decision_2_scopes", func(b *testing.B) {
		before := commandStats(b, info)
		for b.Loop() {
			if d := l.AllowAt(ctx, time.Now(), r); !d.Allowed {
				b.Fatal(d.Err)
			}
		}
		after := commandStats(b, info)
		b.ReportMetric(float64(after["evalsha"]+after["eval"]-before["evalsha"]-before["eval"])/float64(b.N), "roundtrips/op")
	})
}

// testTimeout replaces the store's 250 ms default in tests that are not
// about timeouts: CI runs packages in parallel under the race detector on
// two cores, where a healthy Redis can take longer than that to answer.
const testTimeout = 10 * time.Second
