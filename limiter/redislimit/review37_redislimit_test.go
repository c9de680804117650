package redislimit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/redis/go-redis/v9"
)

// review37Rate is a rate check of one call in a minute, with room for 5.
var review37Rate = limiter.Check{ID: "r37", Key: "k", Kind: limiter.Rate, N: 1, Max: 5, Window: time.Minute}

// TestReview37TinyTimeoutIsHonoured pins that any positive Timeout bounds
// every call as set, even one too short to reach Redis: the batch fails
// with context.DeadlineExceeded (the limiter then fails as configured)
// rather than the Timeout being replaced by the 250ms default, which only
// the zero or a negative Timeout means.
func TestReview37TinyTimeoutIsHonoured(t *testing.T) {
	s := New(agreeClient(t), &Options{Prefix: "r37tiny:", Timeout: time.Nanosecond})
	b := &limiter.Batch{Checks: []limiter.Check{review37Rate}}
	if err := s.Apply(context.Background(), time.Now(), b); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Apply with Timeout 1ns = %v (denied %d); want context.DeadlineExceeded", err, b.Denied)
	}
}

// TestReview37ErrorsSayWhoFailed pins how Apply's errors tell a Redis that
// is too slow, a Redis that refuses, a script that fails and a caller that
// gave up apart: the operator reading the refused call's log must be sent
// to Redis for the first three, and not for the last, and each error wraps
// its cause. A Redis that does not answer is reported with the bound it
// missed, the documented default of 250ms when Timeout is zero.
func TestReview37ErrorsSayWhoFailed(t *testing.T) {
	const gaveUp, noAnswer = "caller gave up", "no answer from redis within"
	ctx := context.Background()
	b := func() *limiter.Batch { return &limiter.Batch{Checks: []limiter.Check{review37Rate}} }

	t.Run("redis_hung_default_timeout", func(t *testing.T) {
		srv := testsvc.StartRedis(t)
		c := redis.NewClient(&redis.Options{Addr: srv.Addr})
		t.Cleanup(func() { c.Close() })
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := srv.Pause(); err != nil {
			t.Fatal(err)
		}
		defer srv.Resume()
		err := New(c, nil).Apply(ctx, time.Now(), b())
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), noAnswer+" 250ms") || strings.Contains(err.Error(), gaveUp) {
			t.Errorf("Apply against a hung Redis = %v; want context.DeadlineExceeded, saying %q", err, noAnswer+" 250ms")
		}
	})
	t.Run("redis_stopped", func(t *testing.T) {
		srv := testsvc.StartRedis(t)
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1})
		t.Cleanup(func() { c.Close() })
		srv.Stop()
		err := New(c, &Options{Timeout: review37Timeout}).Apply(ctx, time.Now(), b())
		var oerr *net.OpError
		if !errors.As(err, &oerr) || strings.Contains(err.Error(), gaveUp) || strings.Contains(err.Error(), noAnswer) {
			t.Errorf("Apply against a stopped Redis = %v; want the connection's error, blamed on no one else", err)
		}
	})
	t.Run("script_fails", func(t *testing.T) {
		c := agreeClient(t)
		s := New(c, &Options{Prefix: "r37err:", Timeout: review37Timeout})
		if err := c.LPush(ctx, s.Key(review37Rate), "x").Err(); err != nil {
			t.Fatal(err)
		}
		err := s.Apply(ctx, time.Now(), b())
		var rerr redis.Error
		if !errors.As(err, &rerr) || strings.Contains(err.Error(), gaveUp) || strings.Contains(err.Error(), noAnswer) {
			t.Errorf("Apply on a key of the wrong type = %v; want Redis's error as it is", err)
		}
	})
	c := agreeClient(t)
	s := New(c, &Options{Prefix: "r37gone:", Timeout: review37Timeout})
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	passed, cancel2 := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel2()
	for _, tt := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"caller_cancelled", cancelled, context.Canceled},
		{"caller_deadline_passed", passed, context.DeadlineExceeded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Apply(tt.ctx, time.Now(), b())
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), gaveUp) || strings.Contains(err.Error(), noAnswer) {
				t.Errorf("Apply = %v; want %v, saying %q", err, tt.want, gaveUp)
			}
		})
	}
}

// TestReview37NilStoreCheckServerFailsClosed pins that CheckServer of a nil
// *Store, like that of a Store without a client, returns an error rather
// than panicking: a start-up check must refuse to serve, not crash or pass.
func TestReview37NilStoreCheckServerFailsClosed(t *testing.T) {
	var nilStore *Store
	for name, s := range map[string]*Store{"nil_store": nilStore, "zero_store": {}} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("CheckServer panicked: %v", p)
				}
			}()
			if err := s.CheckServer(context.Background()); err == nil {
				t.Error("CheckServer = nil, want an error")
			}
		})
	}
}

// TestReview37MicrosecondWindowAccepted pins the edge of the store's
// resolution: a Rate or Spend window of exactly one microsecond is a
// limit like any other (refused only below it, as Apply documents), and
// is enforced: the second call in the same microsecond is denied.
func TestReview37MicrosecondWindowAccepted(t *testing.T) {
	s := New(agreeClient(t), &Options{Prefix: "r37us:", ClientTime: true, Timeout: review37Timeout})
	now := time.Unix(1_700_000_000, 0)
	for _, kind := range []limiter.Kind{limiter.Rate, limiter.Spend} {
		c := limiter.Check{ID: "us" + kind.String(), Kind: kind, N: 1, Max: 1, Window: time.Microsecond}
		// The key expires on the server's real clock (see ClientTime), a
		// millisecond or two after the first call: a busy machine can let
		// it lapse before the second. So each try takes a fresh key, and
		// one try of 20 with the second call denied shows the limit holds.
		want := []string{"<nil> -1", "<nil> 0"} // allowed, then denied
		var got []string
		for try := range 20 {
			c.Key = fmt.Sprint("k", try)
			got = got[:0]
			for range 2 {
				b := &limiter.Batch{Checks: []limiter.Check{c}}
				err := s.Apply(context.Background(), now, b)
				got = append(got, fmt.Sprint(err, " ", b.Denied))
			}
			if slices.Equal(got, want) {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%v window 1µs, two calls: Apply = %q; want %q in one of 20 tries", kind, got, want)
		}
		c.Window = time.Microsecond - 1
		if err := s.Apply(context.Background(), now, &limiter.Batch{Checks: []limiter.Check{c}}); err == nil {
			t.Errorf("%v window 999ns: Apply = nil, want an error", kind)
		}
	}
}

// TestReview37AnswerOutsideContractFails pins that Apply turns a reply that
// is not a decision (a proxy's, a script of another version) into an
// error, the decision failing as configured, rather than into a Denied
// outside the Batch contract (-1 or a check's index) or a crash.
func TestReview37AnswerOutsideContractFails(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		reply answer
	}{
		{"empty", answer{}},
		{"one_value", answer{int64(-1)}},
		{"three_values", answer{int64(-1), int64(0), int64(0)}},
		{"abandoned_lease", answer{int64(-2), int64(0)}},
		{"below_minus_one", answer{int64(-3), int64(0)}},
		{"index_past_checks", answer{int64(1), int64(0)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("Apply with reply %v panicked: %v", tt.reply, p)
				}
			}()
			b := &limiter.Batch{Checks: []limiter.Check{review37Rate}}
			if err := New(tt.reply, nil).Apply(ctx, time.Now(), b); err == nil {
				t.Errorf("Apply with reply %v = nil (denied %d, retry %v); want an error", tt.reply, b.Denied, b.RetryAfter)
			}
		})
	}
}

// TestReview37LateReservationOfAbandonedLeaseFails pins what a reservation
// whose lease was abandoned first (its caller timed out and gave it up, and
// the reservation arrives after) gets from Apply on a real Redis: an
// error, not the script's "-2" as a Denied no caller of a Store expects;
// and it takes no slot.
func TestReview37LateReservationOfAbandonedLeaseFails(t *testing.T) {
	s := New(agreeClient(t), &Options{Prefix: "r37late:", Timeout: review37Timeout})
	ctx := context.Background()
	slot := limiter.Check{ID: "c", Key: "k", Kind: limiter.Concurrency, N: 1, Max: 1}
	if err := s.Apply(ctx, time.Now(), &limiter.Batch{Release: true, Abandon: true, Lease: 7, Checks: []limiter.Check{slot}}); err != nil {
		t.Fatalf("abandon of lease 7: %v", err)
	}
	late := &limiter.Batch{Lease: 7, Checks: []limiter.Check{slot}}
	if err := s.Apply(ctx, time.Now(), late); err == nil {
		t.Errorf("late reservation of abandoned lease 7 = nil, denied %d; want an error", late.Denied)
	}
	other := &limiter.Batch{Lease: 8, Checks: []limiter.Check{slot}}
	if err := s.Apply(ctx, time.Now(), other); err != nil || other.Denied != -1 {
		t.Errorf("reservation of lease 8 under a cap of one = %v, denied %d; want nil, -1 (the late one took no slot)", err, other.Denied)
	}
}

// review37Timeout replaces the store's 250ms default in the tests here that
// are not about timeouts, for a loaded CI machine.
const review37Timeout = 10 * time.Second
