package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// intentFailSink is a memSink whose write-ahead intents fail while down is
// set; outcomes are always kept.
type intentFailSink struct {
	memSink
	down atomic.Bool
}

func (s *intentFailSink) Write(ctx context.Context, e *audit.Event) error {
	if e.Phase == audit.PhaseIntent && s.down.Load() {
		return errors.New("disk full")
	}
	return s.memSink.Write(ctx, e)
}

// TestRefusedWriteIsGivenBackItsCharge checks that a write refused with
// AUDIT_UNAVAILABLE (its write-ahead intent could not be made, so it never
// ran) consumes nothing: the retry its refusal invites, once the trail is
// back, is allowed by a spend and a rate cap that the first attempt alone
// would have used up, and the refusal's record has cost 0. Before the
// refund, the retry was refused with SPEND_LIMIT_EXCEEDED.
func TestRefusedWriteIsGivenBackItsCharge(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "pay", Class: policy.Write, Cost: 10}},
		WriteAllowlist: []string{"pay"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour},
		{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := &intentFailSink{}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Limiter: lim, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var ran int
	h, err := g.Wrap(&mcp.Tool{Name: "pay", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran++
			return textResult("paid"), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	sink.down.Store(true)
	res, err := h(context.Background(), req("pay", `{}`))
	if got := codeOf(t, res, err); got != "AUDIT_UNAVAILABLE" {
		t.Fatalf("with the trail down: %q, want AUDIT_UNAVAILABLE", got)
	}
	sink.down.Store(false)
	res, err = h(context.Background(), req("pay", `{}`))
	if got := codeOf(t, res, err); got != "" {
		t.Fatalf("the retry with the trail back: %q, want it allowed", got)
	}
	if ran != 1 {
		t.Errorf("handler ran %d times, want 1", ran)
	}
	res, err = h(context.Background(), req("pay", `{}`))
	if got := codeOf(t, res, err); got != "SPEND_LIMIT_EXCEEDED" && got != "RATE_LIMIT_EXCEEDED" {
		t.Errorf("a third call: %q, want a cap: the retry was charged", got)
	}
	var costs []float64
	for _, e := range sink.all() {
		if e.Phase == audit.PhaseOutcome {
			costs = append(costs, e.Cost)
		}
	}
	if len(costs) != 3 || costs[0] != 0 || costs[1] != 10 || costs[2] != 0 {
		t.Errorf("outcome costs %v, want [0 10 0]", costs)
	}
}
