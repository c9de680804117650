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

// countingStore records what the Redis store's Apply refused.
type countingStore struct {
	*redislimit.Store
	mu   sync.Mutex
	errs []error
	seen map[string]int
}

func (s *countingStore) Apply(ctx context.Context, now time.Time, b *limiter.Batch) error {
	err := s.Store.Apply(ctx, now, b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.errs = append(s.errs, err)
	}
	what := "reserve"
	switch {
	case b.Release:
		what = "release"
	case b.Refund:
		what = "refund"
	}
	for _, c := range b.Checks {
		if c.Peek {
			what = "peek"
		}
	}
	s.seen[what]++
	return err
}

// TestReview20bLimiterBatchesKeepTheContract: the Redis store's validCheck
// and the script's reads refuse no batch the Limiter itself sends:
// reservations, dry runs (Peek spend checks; a dry run of cost 0 sends
// none), releases of concurrency checks (N 1, Window 0), and refunds, of a
// zero-cost call too, at the edges of every limit's Max and Window.
func TestReview20bLimiterBatchesKeepTheContract(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	s := &countingStore{Store: redislimit.New(c, &redislimit.Options{Prefix: "r20b:", Timeout: testTimeout}), seen: map[string]int{}}
	l := newLimiter(t, s, nil,
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.User, Max: 1000, Window: time.Hour},
		limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 1, Window: limiter.MinWindow},
		limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 1e9, Window: limiter.MaxWindow},
		limiter.Limit{Kind: limiter.Spend, Scope: limiter.Global, Max: 5e-324, Window: time.Minute, Tool: "other"},
		limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 1.7976931348623157e308, Window: time.Hour},
		limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.User, Max: 2},
		limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 2147483647, Tool: "t"},
	)
	requests := []limiter.Request{
		{User: "u", Session: "s", Tool: "t", Calls: 1},
		{User: "u", Session: "s", Tool: "t", Cost: 5},
		{User: "u", Session: "s", Tool: "t", Calls: 1, Cost: 5, DryRun: true},
		{User: "u", Session: "s", Tool: "t", Calls: 1, DryRun: true},
		{User: "u", Session: "s", Tool: "t", DryRun: true},
		{User: "u", Session: "s", Tool: "t"},
		{User: "u", Session: "s", Tool: "t", Calls: 1, Cost: 5e-324},
		{User: "u", Session: "s", Tool: "t", Calls: 3, Cost: 1e300},
		{User: "u", Session: "s", Tool: "other", Calls: 1, Cost: 2},
	}
	ctx := context.Background()
	for round := 0; round < 3; round++ {
		for i, r := range requests {
			now := time.Now()
			d := l.AllowAt(ctx, now, r)
			if d.Err != nil {
				t.Errorf("round %d, request %d %+v: %v", round, i, r, d.Err)
			}
			if d.Allowed {
				if err := l.Refund(ctx, time.Now(), d); err != nil {
					t.Errorf("round %d, request %d %+v: Refund: %v", round, i, r, err)
				}
			}
			l.Release(d)
		}
		time.Sleep(2 * time.Millisecond)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, err := range s.errs {
		t.Errorf("the store refused a batch of the Limiter: %v", err)
	}
	for _, what := range []string{"reserve", "peek", "release", "refund"} {
		if s.seen[what] == 0 {
			t.Errorf("no %s batch reached the store (%v)", what, s.seen)
		}
	}
}
