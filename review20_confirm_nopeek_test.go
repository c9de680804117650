package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestConfirmAskingRoundStoreThatDoesNotPeek checks the Guard's asking
// round on a limiter whose store is not a PeekStore (a MemoryStore behind
// a StoreFunc): the cost cannot be asked about without being taken, so it
// is not sent; the round counts its call only, as documented
// ([limiter.Request].DryRun), and the confirmed round still meets the
// spend cap: a call over it is refused and does not run. Nothing is taken
// from the spend cap by asking.
func TestConfirmAskingRoundStoreThatDoesNotPeek(t *testing.T) {
	mem := limiter.NewMemoryStore()
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour},
		{Kind: limiter.Rate, Scope: limiter.User, Max: 5, Window: time.Hour},
	}, &limiter.Options{Store: limiter.StoreFunc(mem.Apply)})
	if err != nil {
		t.Fatal(err)
	}
	six := func(map[string]any) (float64, error) { return 6, nil }
	g, err := mcpguard.New(stepPolicy(t), fixed(bob), &mcpguard.Options{
		Limiter: lim, Logger: quiet, Confirmer: testSigner(t, nil), NoWriteAhead: true,
		Now:   func() time.Time { return dsT0 },
		Tools: map[string]mcpguard.ToolOptions{"wipe": {Cost: six}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var s stub
	h, err := g.Wrap(&mcp.Tool{Name: "wipe", InputSchema: json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}}}`)}, s.handle)
	if err != nil {
		t.Fatal(err)
	}
	const args = `{"target":"db-1"}`
	var states []string
	for i := range 2 {
		ask, err := h(context.Background(), req("wipe", args))
		if err != nil || ask.RequestState == "" {
			t.Fatalf("asking round %d: %q %s; want the human asked", i, codeOf(t, ask, err), mustJSON(ask))
		}
		states = append(states, ask.RequestState)
	}
	res, err := confirmRound(h, "wipe", args, states[0], "accept")
	if got := codeOf(t, res, err); got != "" || s.ran != 1 {
		t.Fatalf("first confirmed round (6 of 10): %q, ran %d", got, s.ran)
	}
	res, err = confirmRound(h, "wipe", args, states[1], "accept")
	if got := codeOf(t, res, err); got != string(mcpguard.CodeSpendLimitExceeded) || s.ran != 1 {
		t.Errorf("second confirmed round (6 with 4 left): %q, ran %d; want SPEND_LIMIT_EXCEEDED, not run", got, s.ran)
	}
	// Two asking rounds counted two calls; the confirmed ones none.
	calls := 0
	for lim.AllowAt(context.Background(), dsT0, limiter.Request{User: "bob", Calls: 1}).Allowed {
		calls++
	}
	if calls != 3 {
		t.Errorf("%d calls left, want 3", calls)
	}
}
