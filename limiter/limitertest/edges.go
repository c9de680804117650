package limitertest

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// testKeysDistinct checks that distinct keys are distinct buckets, byte for
// byte: the empty key, keys that differ by a separator, by case, by Unicode
// normalization or only past their first 64 KiB, keys that look like a
// limit's ID or carry Redis Cluster hash-tag braces; and that the same key
// under another scope is another bucket.
func testKeysDistinct(t *testing.T, s limiter.Store) {
	long := strings.Repeat("k", 64<<10)
	keys := []string{
		"", "a", "A", "a:", ":a", "a:b", "a\x00", "\x00a", "\xff",
		"\u00e9", "e\u0301", // é composed and decomposed
		"{t}", "{t}a", "}{", `rate:session:1m0s:"":a`, `"":a`,
		long, long + "x",
	}
	l := newLimiter(t, s,
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 1, Window: time.Minute},
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Minute},
	)
	name := func(k string) string {
		if len(k) > 40 {
			return fmt.Sprintf("%s... (%d bytes)", k[:20], len(k))
		}
		return k
	}
	// Every session key once, each with a user key of its own: all allowed.
	for i, k := range keys {
		d := l.AllowAt(context.Background(), t0, limiter.Request{Session: k, User: "user-" + string(rune('A'+i)), Calls: 1})
		if !d.Allowed {
			t.Errorf("first call of session %q: %+v, want allowed (its bucket is another key's)", name(k), outcomeOf(d))
		}
	}
	// The same keys as users (another scope, other buckets): all allowed.
	for i, k := range keys {
		d := l.AllowAt(context.Background(), t0, limiter.Request{Session: "session-" + string(rune('A'+i)), User: k, Calls: 1})
		if !d.Allowed {
			t.Errorf("first call of user %q: %+v, want allowed (its bucket is a session's or another user's)", name(k), outcomeOf(d))
		}
	}
	// Every session key again: its bucket is spent.
	for i, k := range keys {
		d := l.AllowAt(context.Background(), t0, limiter.Request{Session: k, User: "other-" + string(rune('A'+i)), Calls: 1})
		if d.Allowed || d.Limit.Scope != limiter.Session {
			t.Errorf("second call of session %q: %+v, want denied by the session limit", name(k), outcomeOf(d))
		}
	}
}

// testExtremeAmounts checks amounts at the edges of float64 and int: a cost
// equal to a huge Max fits (no overflow turns it into "never"), a cost or a
// number of calls beyond any Max never fits, and a positive cost however
// small is never free. A cost above Max by less than one clock tick's worth
// of units never fits either. A burst of exactly Max fits on the longest
// windows.
func testExtremeAmounts(t *testing.T, s limiter.Store) {
	t.Run("huge_max", func(t *testing.T) {
		for _, max := range []float64{1e300, math.MaxFloat64} {
			l := newLimiter(t, s, limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: max, Window: time.Minute})
			sess := fmt.Sprint("huge-", max)
			runSteps(t, l, []step{
				{0, limiter.Request{Session: sess, Cost: max}, allowed},
				{0, limiter.Request{Session: sess, Cost: max / 2}, denied(limiter.Spend, limiter.Session, 30*time.Second)},
				{30 * time.Second, limiter.Request{Session: sess, Cost: max / 2}, allowed},
			})
		}
	})
	t.Run("beyond_max", func(t *testing.T) {
		l := newLimiter(t, s,
			limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 5, Window: time.Minute},
			limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 10, Window: time.Minute},
		)
		runSteps(t, l, []step{
			{0, limiter.Request{Session: "beyond", Calls: 6}, denied(limiter.Rate, limiter.Session, 0)},
			{0, limiter.Request{Session: "beyond", Calls: math.MaxInt}, denied(limiter.Rate, limiter.Session, 0)},
			{0, limiter.Request{Session: "beyond", Cost: math.MaxFloat64}, denied(limiter.Spend, limiter.Session, 0)},
			{0, limiter.Request{Session: "beyond", Cost: 1e300}, denied(limiter.Spend, limiter.Session, 0)},
			// Above Max by less than the store's tick's worth: never too,
			// however the time it would take is rounded.
			{0, limiter.Request{Session: "beyond", Cost: 10.0000000001}, denied(limiter.Spend, limiter.Session, 0)},
			// They took nothing: the full budgets remain.
			{0, limiter.Request{Session: "beyond", Calls: 5, Cost: 10}, allowed},
		})
	})
	t.Run("long_window_burst_fits", func(t *testing.T) {
		// Window*n/Max rounded down exactly: on windows of months and years
		// a rounding up of the product took a call of exactly Max for more
		// than the bucket (refused for ever), or made the last call of a
		// burst of Max wait a tick.
		year := 365 * 24 * time.Hour
		for i, c := range []struct {
			limit limiter.Limit
			req   limiter.Request
			times int
		}{
			{limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 2755.2, Window: 90 * 24 * time.Hour}, limiter.Request{Cost: 2755.2}, 1},
			{limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 5685.9, Window: year}, limiter.Request{Cost: 5685.9}, 1},
			{limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 11, Window: year}, limiter.Request{Calls: 1}, 11},
			{limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 7, Window: limiter.MaxWindow - 77}, limiter.Request{Calls: 7}, 1},
		} {
			l := newLimiter(t, s, c.limit)
			c.req.Session = fmt.Sprint("long-", i)
			var steps []step
			for range c.times {
				steps = append(steps, step{0, c.req, allowed})
			}
			runSteps(t, l, steps)
		}
	})
	t.Run("tiny_cost_not_free", func(t *testing.T) {
		l := newLimiter(t, s, limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 10, Window: time.Minute})
		runSteps(t, l, []step{{0, limiter.Request{Session: "tiny", Cost: 10}, allowed}})
		for _, cost := range []float64{1e-9, math.SmallestNonzeroFloat64} {
			d := l.AllowAt(context.Background(), t0, limiter.Request{Session: "tiny", Cost: cost})
			if d.Allowed || d.Limit.Kind != limiter.Spend || d.RetryAfter <= 0 || d.RetryAfter > time.Millisecond {
				t.Errorf("cost %v on a spent bucket: %+v, want a spend denial with a retry in (0, 1ms]", cost, outcomeOf(d))
			}
			l.Release(d)
		}
	})
}

// testTimeGoesBack checks that a call at a time before the last one gets
// nothing extra: the bucket is as spent as at the later time, and the wait
// counts from the earlier one.
func testTimeGoesBack(t *testing.T, s limiter.Store) {
	l := newLimiter(t, s, limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 2, Window: time.Second})
	r := limiter.Request{Session: "back", Calls: 1}
	runSteps(t, l, []step{
		{time.Hour, r, allowed}, {time.Hour, r, allowed},
		{0, r, denied(limiter.Rate, limiter.Session, time.Hour+500*time.Millisecond)},
		{time.Hour - time.Second, r, denied(limiter.Rate, limiter.Session, time.Second+500*time.Millisecond)},
		{time.Hour, r, denied(limiter.Rate, limiter.Session, 500*time.Millisecond)},
		{time.Hour + 500*time.Millisecond, r, allowed},
		{time.Hour + 500*time.Millisecond, r, denied(limiter.Rate, limiter.Session, 500*time.Millisecond)},
	})
}
