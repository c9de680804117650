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

// resending is a Store that sends every refund batch twice, as go-redis
// does when the reply to its first sending is lost (a reset connection):
// Redis ran the script the first time, and runs it again.
type resending struct {
	*redislimit.Store
	mu      sync.Mutex
	refunds []uint64 // the leases of the refunds sent
}

func (r *resending) Apply(ctx context.Context, now time.Time, b *limiter.Batch) error {
	if !b.Refund {
		return r.Store.Apply(ctx, now, b)
	}
	r.mu.Lock()
	r.refunds = append(r.refunds, b.Lease)
	r.mu.Unlock()
	if err := r.Store.Apply(ctx, now, b); err != nil {
		return err
	}
	again := *b
	return r.Store.Apply(ctx, now, &again)
}

// TestRefundResentIsCarriedOutOnce: a refund that reaches Redis twice (the
// client's retry after a lost reply) gives back its units once. Under a
// limit of 2 calls per minute, after two calls and the refund of one, one
// more call passes and the next is refused; before refunds carried a
// marker, the resent refund gave back a second unit, and two more calls
// passed: 3 calls in one instant under a limit of 2. Two Refunds of two
// decisions are two refunds (each its own marker), and a refund batch
// without a Lease (sent to the Store directly) has no marker and is
// carried out each time it is sent, as before.
func TestRefundResentIsCarriedOutOnce(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	ctx := context.Background()
	t0 := time.Unix(1_800_000_000, 0)
	lim := limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 2, Window: time.Minute}
	r := limiter.Request{Session: "s", Calls: 1}

	t.Run("resent", func(t *testing.T) {
		s := &resending{Store: redislimit.New(c, &redislimit.Options{Prefix: "review10a:", ClientTime: true, Timeout: testTimeout})}
		l := newLimiter(t, s, nil, lim)
		d1, d2 := l.AllowAt(ctx, t0, r), l.AllowAt(ctx, t0, r)
		if !d1.Allowed || !d2.Allowed {
			t.Fatalf("the first two calls: %+v, %+v", d1, d2)
		}
		if err := l.Refund(ctx, t0, d1); err != nil {
			t.Fatal(err)
		}
		if d := l.AllowAt(ctx, t0, r); !d.Allowed {
			t.Fatalf("after one refund, a call is refused: %+v", d)
		}
		if d := l.AllowAt(ctx, t0, r); d.Allowed {
			t.Fatalf("a refund sent twice gave back two units: 3 calls at one instant under a limit of %v per minute", lim.Max)
		}
		// Another decision's refund is another refund.
		if err := l.Refund(ctx, t0, d2); err != nil {
			t.Fatal(err)
		}
		if d := l.AllowAt(ctx, t0, r); !d.Allowed {
			t.Errorf("the second decision's refund gave nothing back: %+v", d)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.refunds) != 2 || s.refunds[0] == 0 || s.refunds[0] == s.refunds[1] {
			t.Errorf("refund leases %v, want two distinct non-zero", s.refunds)
		}
		keys, err := c.Keys(ctx, "review10a:refund:*").Result()
		if err != nil || len(keys) != 2 {
			t.Fatalf("refund markers %v (%v), want 2", keys, err)
		}
		for _, k := range keys {
			if ttl, err := c.PTTL(ctx, k).Result(); err != nil || ttl <= 0 || ttl > 5*time.Minute {
				t.Errorf("marker %s: TTL %v (%v), want at most 5 minutes", k, ttl, err)
			}
		}
	})

	t.Run("no_lease", func(t *testing.T) {
		s := redislimit.New(c, &redislimit.Options{Prefix: "review10b:", ClientTime: true, Timeout: testTimeout})
		l := newLimiter(t, s, nil, lim)
		if d1, d2 := l.AllowAt(ctx, t0, r), l.AllowAt(ctx, t0, r); !d1.Allowed || !d2.Allowed {
			t.Fatalf("the first two calls: %+v, %+v", d1, d2)
		}
		b := limiter.Batch{Refund: true, Checks: []limiter.Check{{ID: lim.ID(), Key: "s", Kind: limiter.Rate, Max: lim.Max, Window: lim.Window, N: 1}}}
		for range 2 {
			again := b
			if err := s.Apply(ctx, t0, &again); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 2 {
			if d := l.AllowAt(ctx, t0, r); !d.Allowed {
				t.Errorf("call %d after two lease-less refunds: refused, want each refund carried out", i+1)
			}
		}
		if keys, _ := c.Keys(ctx, "review10b:refund:*").Result(); len(keys) != 0 {
			t.Errorf("markers %v for refunds without a lease", keys)
		}
	})
}
