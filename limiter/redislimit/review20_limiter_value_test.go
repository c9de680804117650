package redislimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
)

// TestReview20CorruptStateFailsClosed puts, in a spend key, values the
// store never writes (a TAT is a whole number of microseconds) and checks
// that a real call and a dry run on it are refused with an error that
// unwraps to ErrStoreUnavailable, leaving the value as it was. The script
// used to read "nan" as a bucket that is always full: every call allowed,
// and the key, which it then never wrote, kept without expiry: no limit
// for that key, ever. "inf" denied every call for ever, with a wait that
// is not a duration.
func TestReview20CorruptStateFailsClosed(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	ctx := context.Background()
	lim := limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 1, Window: time.Hour}
	s := redislimit.New(c, &redislimit.Options{Prefix: "r20v:", Timeout: testTimeout})
	l := newLimiter(t, s, nil, lim)
	for _, v := range []string{"nan", "-nan", "inf", "-inf", "1e400", "abc", "12abc", " "} {
		user := "u-" + v
		key := s.Key(limiter.Check{ID: lim.ID(), Key: user})
		if err := c.Set(ctx, key, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
		for _, dry := range []bool{true, false, false} {
			d := l.AllowAt(ctx, time.Now(), limiter.Request{User: user, Cost: 1, DryRun: dry})
			if d.Allowed || !errors.Is(d.Err, limiter.ErrStoreUnavailable) {
				t.Errorf("value %q, dry run %v: allowed %v, err %v; want denied with an error that unwraps to ErrStoreUnavailable", v, dry, d.Allowed, d.Err)
			}
			l.Release(d)
		}
		if got, err := c.Get(ctx, key).Result(); err != nil || got != v {
			t.Errorf("value %q afterwards: %q, %v; want it untouched", v, got, err)
		}
	}
}

// TestReview20CorruptStateRefundChangesNothing: a refund whose second
// bucket holds a value that is not a time, or a key of the wrong type,
// fails and gives back nothing, in the first bucket either, and leaves no
// refund marker. Redis does not undo a script's writes when it fails
// midway; the script used to write the first bucket and the marker before
// it read the second (a retry then found the marker and did nothing).
func TestReview20CorruptStateRefundChangesNothing(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	ctx := context.Background()
	user := limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour}
	sess := limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 10, Window: time.Hour}
	for name, corrupt := range map[string]func(key string) error{
		"nan":        func(key string) error { return c.Set(ctx, key, "nan", 0).Err() },
		"wrong_type": func(key string) error { c.Del(ctx, key); return c.RPush(ctx, key, "x").Err() },
	} {
		t.Run(name, func(t *testing.T) {
			prefix := "r20f" + name + ":"
			s := redislimit.New(c, &redislimit.Options{Prefix: prefix, Timeout: testTimeout})
			l := newLimiter(t, s, nil, user, sess)
			d := l.AllowAt(ctx, time.Now(), limiter.Request{User: "u", Session: "s", Cost: 5})
			if !d.Allowed {
				t.Fatalf("AllowAt: %+v", d)
			}
			userKey := s.Key(limiter.Check{ID: user.ID(), Key: "u"})
			before, err := c.Get(ctx, userKey).Result()
			if err != nil {
				t.Fatal(err)
			}
			if err := corrupt(s.Key(limiter.Check{ID: sess.ID(), Key: "s"})); err != nil {
				t.Fatal(err)
			}
			if err := l.Refund(ctx, time.Now(), d); !errors.Is(err, limiter.ErrStoreUnavailable) {
				t.Errorf("Refund with a corrupt session bucket: %v; want an error that unwraps to ErrStoreUnavailable", err)
			}
			if after, err := c.Get(ctx, userKey).Result(); err != nil || after != before {
				t.Errorf("user bucket after the failed refund: %q (%v); want %q, unchanged", after, err, before)
			}
			if keys, err := c.Keys(ctx, prefix+"refund:*").Result(); err != nil || len(keys) != 0 {
				t.Errorf("refund markers after the failed refund: %v (%v); want none", keys, err)
			}
		})
	}
}
