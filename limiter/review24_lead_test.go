package limiter_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview24ToolLimitEverySpelling: a limit for one tool was compared
// with the called name exactly, so behind a gateway "SEARCH" or "ſearch"
// escaped the limit of "search", which a downstream lenient with the case
// of names runs. Every spelling the policy takes for the name now shares
// the limit's budget, in memory and through a store.
func TestReview24ToolLimitEverySpelling(t *testing.T) {
	now := time.Unix(1e9, 0)
	lims := []limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Tool: "search", Max: 1, Window: time.Hour}}
	for _, spelling := range []string{"SEARCH", "Search", "ſearch", "search\u200b"} {
		l, err := limiter.New(lims, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := l.AllowAt(context.Background(), now, limiter.Request{User: "u", Tool: "search", Calls: 1}); !d.Allowed {
			t.Fatalf("first call refused: %+v", d)
		}
		if d := l.AllowAt(context.Background(), now, limiter.Request{User: "u", Tool: spelling, Calls: 1}); d.Allowed {
			t.Errorf("%q after search's one call: allowed, want the limit of search", spelling)
		}
	}
	// Other names are not the tool's.
	l, _ := limiter.New(lims, nil)
	l.AllowAt(context.Background(), now, limiter.Request{User: "u", Tool: "search", Calls: 1})
	for _, other := range []string{"searches", "sear", "research", ""} {
		if d := l.AllowAt(context.Background(), now, limiter.Request{User: "u", Tool: other, Calls: 1}); !d.Allowed {
			t.Errorf("%q: refused by search's limit", other)
		}
	}
	// Through a store, the checks built for another spelling include the
	// tool's limit.
	var checks int
	store := limiter.StoreFunc(func(_ context.Context, _ time.Time, b *limiter.Batch) error {
		checks = len(b.Checks)
		b.Denied = -1
		return nil
	})
	ls, err := limiter.New(lims, &limiter.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	ls.AllowAt(context.Background(), now, limiter.Request{User: "u", Tool: "SEARCH", Calls: 1})
	if checks != 1 {
		t.Errorf("a store was asked %d checks for SEARCH, want search's limit", checks)
	}
}
