package limiter_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// recordingStore hides a MemoryStore from the Limiter's in-memory fast
// path, so that every batch goes through the public Apply (and its
// validCheck), and records the errors Apply returns.
type recordingStore struct {
	*limiter.MemoryStore
	mu   sync.Mutex
	errs []error
	seen map[string]int // batches by what they do
}

func (s *recordingStore) Apply(ctx context.Context, now time.Time, b *limiter.Batch) error {
	err := s.MemoryStore.Apply(ctx, now, b)
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

// review20bRequests are the requests whose batches sit at the edges of the
// Check contract: no calls, no cost, a dry run of nothing, the smallest and
// a huge cost, another tool.
var review20bRequests = []limiter.Request{
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

// review20bLimits: every kind and scope, a tool's own limit, a tiny and a
// huge Max, the shortest and longest windows.
var review20bLimits = []limiter.Limit{
	{Kind: limiter.Rate, Scope: limiter.User, Max: 1000, Window: time.Hour},
	{Kind: limiter.Rate, Scope: limiter.Session, Max: 1, Window: limiter.MinWindow},
	{Kind: limiter.Spend, Scope: limiter.User, Max: 1e9, Window: limiter.MaxWindow},
	{Kind: limiter.Spend, Scope: limiter.Global, Max: 5e-324, Window: time.Minute, Tool: "other"},
	{Kind: limiter.Spend, Scope: limiter.Session, Max: 1.7976931348623157e308, Window: time.Hour},
	{Kind: limiter.Concurrency, Scope: limiter.User, Max: 2},
	{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 2147483647, Tool: "t"},
}

// TestReview20bLimiterBatchesKeepTheContract: the stores' new validCheck
// refuses no batch the Limiter itself sends: reservations, dry runs (Peek
// spend checks; a dry run of cost 0 sends none), releases of concurrency
// checks (N 1, Window 0), and refunds, of a zero-cost call too.
func TestReview20bLimiterBatchesKeepTheContract(t *testing.T) {
	s := &recordingStore{MemoryStore: limiter.NewMemoryStore(), seen: map[string]int{}}
	l, err := limiter.New(review20bLimits, &limiter.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	for round := 0; round < 3; round++ {
		for i, r := range review20bRequests {
			now = now.Add(time.Millisecond)
			d := l.AllowAt(ctx, now, r)
			if d.Err != nil {
				t.Errorf("round %d, request %d %+v: %v", round, i, r, d.Err)
			}
			if d.Allowed {
				if err := l.Refund(ctx, now.Add(time.Microsecond), d); err != nil {
					t.Errorf("round %d, request %d %+v: Refund: %v", round, i, r, err)
				}
			}
			l.Release(d)
		}
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
