package mcpguard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview61fFailOpenRefusedByCaps: an older client's confirmation is
// asked within the call. The round that asks checks the limits (a peek);
// with the store down and FailOpenWrites it is admitted open, and the call
// is marked fail-open for good. The store is back by the time the human
// accepts: the confirmed charge is decided by the caps, and the spend cap
// refuses the call (SPEND_LIMIT_EXCEEDED). Its outcome record still says
// audit.DetailFailOpen, "admitted without its caps", of a call its caps
// refused: an operator counting the calls that ran uncapped during the
// outage counts one that was capped and never ran.
func TestReview61fFailOpenRefusedByCaps(t *testing.T) {
	store := &r57DownStore{MemoryStore: limiter.NewMemoryStore()}
	store.down.Store(true)
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour},
		{Kind: limiter.Spend, Scope: limiter.User, Max: 5, Window: time.Hour},
	}, &limiter.Options{Store: store, FailOpenWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	cost := map[string]mcpguard.ToolOptions{"wipe": {Cost: func(map[string]any) (float64, error) { return 6, nil }}}
	h := newHarness(t, basePolicy(false), &mcpguard.Options{Limiter: lim, Tools: cost})
	accept := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		store.down.Store(false) // the store is back while the human reads
		return &mcp.ElicitResult{Action: "accept"}, nil
	}
	cs := h.connect(bob, clientOpts{version: "2025-11-25", elicit: accept})
	res, err := call(t, cs, "wipe", map[string]any{"target": "db-1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := errorCode(t, res); got != "SPEND_LIMIT_EXCEEDED" {
		t.Fatalf("code %q, want SPEND_LIMIT_EXCEEDED (the confirmed charge, by a working store)", got)
	}
	if n := h.down.calls.Load(); n != 0 {
		t.Fatalf("the tool ran %d times", n)
	}
	for _, e := range h.sink.all() {
		if e.Tool == "wipe" && e.Phase == audit.PhaseOutcome && strings.Contains(e.Detail, audit.DetailFailOpen) {
			t.Errorf("outcome record %s %q: says the call was admitted without its caps, though its caps refused it", e.Code, e.Detail)
		}
	}
}
