package redislimit

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
	"github.com/redis/go-redis/v9"
)

// TestReview24AgreeWide runs a random sequence against the memory and the
// Redis store, as TestMemoryAndRedisAgree does, with what that test leaves
// out: dry runs, keys with separators, hash-tag braces, NUL, invalid UTF-8
// and long ones, costs at and near the cap, several calls at once, time
// jumps beyond the windows and back, releases of denied and released
// decisions, and second refunds.
func TestReview24AgreeWide(t *testing.T) {
	c := agreeClient(t)
	limits := []limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 4, Window: 2 * time.Second},
		{Kind: limiter.Rate, Scope: limiter.User, Max: 8, Window: 4 * time.Second},
		{Kind: limiter.Spend, Scope: limiter.Session, Max: 4, Window: 8 * time.Second},
		{Kind: limiter.Spend, Scope: limiter.User, Max: 8, Window: 16 * time.Second},
		{Kind: limiter.Spend, Scope: limiter.Global, Tool: "pay", Max: 16, Window: 32 * time.Second},
		{Kind: limiter.Concurrency, Scope: limiter.Session, Max: 2},
		{Kind: limiter.Concurrency, Scope: limiter.User, Max: 3},
	}
	mem, red := agreePair(t, c, "{r24}:", limits...)
	rng := rand.New(rand.NewPCG(24, 1))
	ctx := context.Background()
	keys := []string{"", "a", "a:", ":a", "{a}", "{", "}", "a}", "{a", "\x00", "\xff\xfe", `"`, `a":"b`,
		strings.Repeat("k", 70000), "rate:user:2s:\"\":a", "é", "e\u0301"}
	costs := []float64{0, 0.25, 0.5, 1, 1.5, 2, 3.75, 4, 4.5, 8, 0.125, 16}
	type pair struct {
		m, r     limiter.Decision
		refunded int
	}
	var held, done []pair
	at := time.Duration(0)
	for i := range 4000 {
		switch x := rng.IntN(20); {
		case x < 8:
			at += time.Duration(rng.IntN(500)) * time.Millisecond
		case x == 8:
			at -= time.Duration(rng.IntN(3000)) * time.Millisecond
		case x == 9:
			at += time.Duration(rng.IntN(40)) * time.Second
		}
		now := agreeT0.Add(at)
		if len(held) > 0 && rng.IntN(5) == 0 {
			j := rng.IntN(len(held))
			if held[j].refunded < 2 {
				em, er := mem.Refund(ctx, now, held[j].m), red.Refund(ctx, now, held[j].r)
				if em != nil || er != nil {
					t.Fatalf("step %d: refund: memory %v, redis %v", i, em, er)
				}
				held[j].refunded++
			}
		}
		if len(held) > 0 && rng.IntN(3) == 0 {
			j := rng.IntN(len(held))
			mem.Release(held[j].m)
			red.Release(held[j].r)
			done = append(done, held[j])
			held = append(held[:j], held[j+1:]...)
		}
		if len(done) > 0 && rng.IntN(10) == 0 {
			p := done[rng.IntN(len(done))] // released already, or denied
			mem.Release(p.m)
			red.Release(p.r)
		}
		tool := "read"
		if rng.IntN(3) == 0 {
			tool = "pay"
		}
		r := limiter.Request{
			Session: keys[rng.IntN(len(keys))],
			User:    keys[rng.IntN(4)],
			Tool:    tool,
			Calls:   rng.IntN(3),
			Cost:    costs[rng.IntN(len(costs))],
			DryRun:  rng.IntN(4) == 0,
		}
		dm, dr := mem.AllowAt(ctx, now, r), red.AllowAt(ctx, now, r)
		if om, or := agreeOutcome(dm), agreeOutcome(dr); om != or {
			r.Session = r.Session[:min(len(r.Session), 20)]
			t.Fatalf("step %d at t0%+v, %+v: memory %s, redis %s", i, at, r, om, or)
		}
		km, kr := mem.Kept(now, dm), red.Kept(now, dr)
		if km != kr {
			t.Fatalf("step %d: Kept memory %v, redis %v", i, km, kr)
		}
		if dm.Allowed {
			held = append(held, pair{m: dm, r: dr})
		} else {
			done = append(done, pair{m: dm, r: dr})
		}
	}
}

// TestReview24OutOfRangeStateFailsClosed: a rate or spend key holding a
// finite number that is no time the store writes (beyond 2^53
// microseconds, where Lua's numbers no longer count single microseconds,
// and the script's wait no longer fits a time.Duration) makes the decision
// fail with an error, as the package documents for a value that is not a
// time. The script read it as a bucket spent for centuries or for ever:
// the call was denied with no error and a RetryAfter that had overflowed
// (zero, which means "never", or some wrapped figure), and the key, which
// has no expiry and which the script then never writes, kept the bucket
// shut for good.
func TestReview24OutOfRangeStateFailsClosed(t *testing.T) {
	c := agreeClient(t)
	ctx := context.Background()
	lim := limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 1, Window: time.Hour}
	s := New(c, &Options{Prefix: "r24v:", Timeout: 10 * time.Second})
	l, err := limiter.New([]limiter.Limit{lim}, &limiter.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1e16", "1e17", "1e19", "1e300", "-1e300"} {
		key := s.Key(limiter.Check{ID: lim.ID(), Key: v})
		if err := c.Set(ctx, key, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
		d := l.AllowAt(ctx, time.Now(), limiter.Request{User: v, Cost: 1})
		if d.Allowed || !errors.Is(d.Err, limiter.ErrStoreUnavailable) {
			t.Errorf("value %q: allowed %v, retry %v, err %v; want denied with an error that unwraps to ErrStoreUnavailable", v, d.Allowed, d.RetryAfter, d.Err)
		}
	}
	// A wait beyond a Duration in an answer (a proxy's, say) is no answer
	// either: it is not turned into a wrapped RetryAfter.
	for _, v := range [][]any{{int64(0), int64(math.MaxInt64)}, {int64(0), int64(math.MaxInt64/1000 + 1)}, {int64(0), int64(-2)}, {int64(0), int64(math.MinInt64)}} {
		s := New(answer(v), nil)
		b := &limiter.Batch{Checks: []limiter.Check{{ID: lim.ID(), Kind: limiter.Spend, Max: 1, Window: time.Hour, N: 1}}}
		if err := s.Apply(ctx, time.Now(), b); err == nil {
			t.Errorf("answer %v: denied %d, retry %v; want an error", v, b.Denied, b.RetryAfter)
		}
	}
	for _, v := range [][]any{{int64(0), int64(-1)}, {int64(0), int64(math.MaxInt64 / 1000)}} {
		s := New(answer(v), nil)
		b := &limiter.Batch{Checks: []limiter.Check{{ID: lim.ID(), Kind: limiter.Spend, Max: 1, Window: time.Hour, N: 1}}}
		if err := s.Apply(ctx, time.Now(), b); err != nil || b.Denied != 0 || b.RetryAfter != time.Duration(v[1].(int64))*time.Microsecond {
			t.Errorf("answer %v: denied %d, retry %v, err %v; want it taken as it is", v, b.Denied, b.RetryAfter, err)
		}
	}
}

// answer is a redis.Scripter whose every script answers v.
type answer []any

func (a answer) Eval(context.Context, string, []string, ...any) *redis.Cmd {
	return redis.NewCmdResult([]any(a), nil)
}
func (a answer) EvalSha(context.Context, string, []string, ...any) *redis.Cmd {
	return redis.NewCmdResult([]any(a), nil)
}
func (a answer) EvalRO(context.Context, string, []string, ...any) *redis.Cmd {
	return redis.NewCmdResult([]any(a), nil)
}
func (a answer) EvalShaRO(context.Context, string, []string, ...any) *redis.Cmd {
	return redis.NewCmdResult([]any(a), nil)
}
func (answer) ScriptExists(context.Context, ...string) *redis.BoolSliceCmd {
	return redis.NewBoolSliceResult(nil, nil)
}
func (answer) ScriptLoad(context.Context, string) *redis.StringCmd {
	return redis.NewStringResult("", nil)
}
