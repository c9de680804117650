package redisnonce_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard/confirm/noncetest"
	"github.com/mcpguard/mcpguard/confirm/redisnonce"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// review37MaxKeptUntil is the documented cap on the time a nonce key is
// kept until, in unix milliseconds: 2^53, which Lua's numbers hold exactly.
const review37MaxKeptUntil = 1 << 53

// TestReview37KeyKeptUntilExpiryPlusGrace pins the absolute time, on Redis's
// clock, until which Consume keeps a nonce's key: the state's expiry plus
// Grace, rounded up to the millisecond, and never past 2^53 ms. A key that
// went a millisecond early would let a replica lagging by Grace accept the
// state again; one kept past the cap would not fit Lua's numbers. The key's
// expiry is read with PEXPIRETIME, so nothing waits; it may be late by the
// time between Redis reading its clock and setting the key, which Redis's
// clock read around the call bounds, never early.
func TestReview37KeyKeptUntilExpiryPlusGrace(t *testing.T) {
	r := testsvc.StartRedis(t)
	rdb := newClient(t, r.Addr)
	s := patient(redisnonce.New(rdb, "kept:"))
	ctx := context.Background()
	now := time.Now()
	whole := now.Truncate(time.Second).Add(2 * time.Minute)
	grace := redisnonce.Grace.Milliseconds()
	capSec := int64(review37MaxKeptUntil/1000) - int64(redisnonce.Grace/time.Second)
	tests := []struct {
		name    string
		expires time.Time
		want    int64 // unix milliseconds
	}{
		{"whole_second", whole, whole.UnixMilli() + grace},
		{"whole_millisecond", whole.Add(7 * time.Millisecond), whole.UnixMilli() + 7 + grace},
		{"sub_millisecond_rounds_up", whole.Add(7*time.Millisecond + 1), whole.UnixMilli() + 8 + grace},
		{"half_millisecond_rounds_up", whole.Add(500 * time.Microsecond), whole.UnixMilli() + 1 + grace},
		{"far_below_the_cap", time.Unix(9_000_000_000_000, 0), 9_000_000_000_000_000 + grace},
		{"just_below_the_cap", time.Unix(capSec-1, 999_999_999), (capSec-1)*1000 + 1000 + grace},
		{"at_the_cap", time.Unix(capSec, 999_999_999), review37MaxKeptUntil},
		{"past_the_cap", time.Unix(1<<62, 0), review37MaxKeptUntil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Several nonces: a late millisecond now and then must not hide
			// an early key.
			for range 5 {
				n := noncetest.Nonce()
				before := review37RedisMillis(t, rdb)
				if first, err := s.Consume(ctx, n, now, tt.expires); err != nil || !first {
					t.Fatalf("Consume(%s, expires=%v) = %v, %v; want true, nil", n, tt.expires, first, err)
				}
				late := review37RedisMillis(t, rdb) - before
				got, err := rdb.Do(ctx, "PEXPIRETIME", "kept:"+n).Int64()
				if err != nil {
					t.Fatal(err)
				}
				if got < tt.want || got > tt.want+late {
					t.Errorf("Consume(expires=%v): key kept until %d ms, want %d (up to %d ms late)",
						tt.expires, got, tt.want, late)
				}
			}
		})
	}
}

// review37RedisMillis returns the Redis server's clock in unix milliseconds.
func review37RedisMillis(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now.UnixMilli()
}

// review37ReplyClient is a Redis client whose every command replies reply
// and err, as a proxy or a Redis-compatible server speaking another dialect
// might. Only Do is implemented: the store uses nothing else for nonces.
type review37ReplyClient struct {
	redis.UniversalClient
	reply any
	err   error
}

func (c review37ReplyClient) Do(ctx context.Context, args ...any) *redis.Cmd {
	return redis.NewCmdResult(c.reply, c.err)
}

// TestReview37UnexpectedReplyFailsClosed pins that a script reply that is
// not an integer is an error for Consume and Used, not a verdict: reading
// it as "not first" or "not used" would answer for a store that did not
// decide, and "not used" would let a caller act on a replayed state.
func TestReview37UnexpectedReplyFailsClosed(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	for _, reply := range []any{"OK", nil, []any{int64(1)}} {
		s := redisnonce.New(review37ReplyClient{reply: reply}, "odd:")
		if first, err := s.Consume(ctx, noncetest.Nonce(), now, now.Add(time.Minute)); err == nil || first {
			t.Errorf("Consume with reply %#v = %v, %v; want false and an error", reply, first, err)
		}
		if used, err := s.Used(ctx, noncetest.Nonce(), now, now.Add(time.Minute)); err == nil {
			t.Errorf("Used with reply %#v = %v, nil; want an error", reply, used)
		}
	}
}

// TestReview37ErrorsReturnedAsIs pins that Consume returns Redis's error and
// the context's error as they are (the package doc's promise), with false:
// the caller refuses the confirmation and can tell a full Redis or its own
// cancelled request from other failures.
func TestReview37ErrorsReturnedAsIs(t *testing.T) {
	r := testsvc.StartRedis(t)
	rdb := newClient(t, r.Addr)
	ctx := context.Background()
	now := time.Now()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if first, err := patient(redisnonce.New(rdb, "asis:")).Consume(cancelled, noncetest.Nonce(), now, now.Add(time.Minute)); !errors.Is(err, context.Canceled) || first {
		t.Errorf("Consume with a cancelled ctx = %v, %v; want false, context.Canceled", first, err)
	}
	if used, err := patient(redisnonce.New(rdb, "asis:")).Used(cancelled, noncetest.Nonce(), now, now.Add(time.Minute)); !errors.Is(err, context.Canceled) {
		t.Errorf("Used with a cancelled ctx = %v, %v; want context.Canceled", used, err)
	}
	for _, kv := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", "1"}} {
		if err := rdb.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	first, err := patient(redisnonce.New(rdb, "asis:")).Consume(ctx, noncetest.Nonce(), now, now.Add(time.Minute))
	var rerr redis.Error
	if !errors.As(err, &rerr) || !strings.Contains(err.Error(), "OOM") || first {
		t.Errorf("Consume on a full Redis = %v, %v; want false and Redis's OOM error", first, err)
	}
}

// TestReview37TinyTimeoutIsHonoured pins that any positive Timeout bounds
// each call as set, even one too short to reach Redis: the nonce is refused
// with context.DeadlineExceeded (fail closed) rather than the Timeout being
// replaced by DefaultTimeout, which only the zero or a negative Timeout
// means.
func TestReview37TinyTimeoutIsHonoured(t *testing.T) {
	r := testsvc.StartRedis(t)
	rdb := newClient(t, r.Addr)
	ctx := context.Background()
	now := time.Now()
	s := redisnonce.New(rdb, "tiny:")
	s.Timeout = time.Nanosecond
	n := noncetest.Nonce()
	if first, err := s.Consume(ctx, n, now, now.Add(time.Minute)); !errors.Is(err, context.DeadlineExceeded) || first {
		t.Errorf("Consume with Timeout 1ns = %v, %v; want false, context.DeadlineExceeded", first, err)
	}
	if used, err := s.Used(ctx, n, now, now.Add(time.Minute)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Used with Timeout 1ns = %v, %v; want context.DeadlineExceeded", used, err)
	}
}

// TestReview37NoClientSaysSo pins the error of a Store without a client: it
// names the misconfiguration, for Consume and Used alike, and a nil *Store
// refuses Used too. An operator who forgot New's client must read that in
// the refused confirmation's log, not an odd reply or a timeout.
func TestReview37NoClientSaysSo(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	var nilStore *redisnonce.Store
	for name, s := range map[string]*redisnonce.Store{
		"zero":          {},
		"nil_interface": redisnonce.New(nil, "x:"),
		"nil_store":     nilStore,
	} {
		t.Run(name, func(t *testing.T) {
			const want = "no Redis client"
			if first, err := s.Consume(ctx, noncetest.Nonce(), now, now.Add(time.Minute)); err == nil || first || !strings.Contains(err.Error(), want) {
				t.Errorf("Consume = %v, %v; want false and an error saying %q", first, err, want)
			}
			if used, err := s.Used(ctx, noncetest.Nonce(), now, now.Add(time.Minute)); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Used = %v, %v; want an error saying %q", used, err, want)
			}
		})
	}
}

// TestReview37PanickingClientAnswersAtOnce pins that a client that panics
// (a nil *redis.Client) is reported as such, at once: the store recovers
// the panic on its goroutine and returns it as the call's error, rather
// than waiting out the Timeout or the caller's deadline and reporting a
// timeout that would send the operator looking at Redis.
func TestReview37PanickingClientAnswersAtOnce(t *testing.T) {
	s := redisnonce.New((*redis.Client)(nil), "x:")
	s.Timeout = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	now := time.Now()
	if first, err := s.Consume(ctx, noncetest.Nonce(), now, now.Add(time.Minute)); err == nil || first || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "panicked") {
		t.Errorf("Consume with a nil *redis.Client = %v, %v; want false and the panic as error", first, err)
	}
	if used, err := s.Used(ctx, noncetest.Nonce(), now, now.Add(time.Minute)); err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "panicked") {
		t.Errorf("Used with a nil *redis.Client = %v, %v; want the panic as error", used, err)
	}
}
