package mcpguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview7TrailCostsAddUpToSpend checks audit.Event.Cost's promise that
// "the costs of a trail add up to the spend" with the guard's defaults
// (write-ahead intents on). A user who sums the cost column of the trail
// (SUM(cost) in SQL, jq over JSONL) expects the spend the limiter charged:
// one write of cost 5 under a spend cap of 5. Instead both records of the
// write, the intent and the outcome, carry cost 5, so the trail adds up to
// 10, twice the spend, for every write.
func TestReview7TrailCostsAddUpToSpend(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "create", Class: policy.Write, Cost: 5}},
		WriteAllowlist: []string{"create"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 5, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Limiter: lim, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Wrap(&mcp.Tool{Name: "create", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
	if err != nil {
		t.Fatal(err)
	}
	req := func() *mcp.CallToolRequest {
		return &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "create", Arguments: json.RawMessage(`{}`)}}
	}
	if res, _ := h(context.Background(), req()); res == nil || res.IsError {
		t.Fatalf("first write: %+v, want success", res)
	}
	// The spend cap is used up: the first write was charged 5, no more.
	if res, _ := h(context.Background(), req()); res == nil || !res.IsError {
		t.Fatalf("second write: %+v, want SPEND_LIMIT_EXCEEDED", res)
	}
	var sum float64
	var recs []string
	for _, e := range sink.all() {
		sum += e.Cost
		recs = append(recs, string(e.Phase)+"/"+e.Code)
	}
	if sum != 5 {
		t.Errorf("the trail's costs add up to %v (records %v), want 5, the spend charged", sum, recs)
	}
}

// TestReview7DryRunFailureStaysRetryable checks the dry run of a
// DryRunAware write tool whose handler fails because its upstream is down.
// A dry run touches nothing (ToolOptions.DryRunAware's contract; the
// guard's own outcome logic treats a dry-run write as not run), so the
// refusal should be the contract's retryable UPSTREAM_UNAVAILABLE. Instead
// failedWrite (serve.go) looks only at the rule's class: the preview is
// reported as not retryable, with "the write may have been made: check
// before repeating it", telling the model a preview may have written.
func TestReview7DryRunFailureStaysRetryable(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "create", Class: policy.Write}},
		WriteAllowlist: []string{"create"},
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{
		NoWriteAhead: true, Logger: quiet,
		Tools: map[string]mcpguard.ToolOptions{"create": {DryRunAware: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	h, err := g.Wrap(&mcp.Tool{Name: "create", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran = dryrun.FromContext(ctx)
			return nil, mcpguard.ErrUpstreamUnavailable
		})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{
		Name: "create", Arguments: json.RawMessage(`{}`), Meta: mcp.Meta{dryrun.MetaKey: true},
	}})
	if !ran {
		t.Fatal("the handler did not run in dry-run mode")
	}
	var body struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			Retryable bool   `json:"retryable"`
		} `json:"error"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &body); err != nil || !res.IsError {
		t.Fatalf("result %s", raw)
	}
	if body.Error.Code != string(mcpguard.CodeUpstreamUnavailable) || !body.Error.Retryable ||
		strings.Contains(body.Error.Message, "may have been made") {
		t.Errorf("failed dry run of a write: %s, want a retryable UPSTREAM_UNAVAILABLE that does not say a write may have been made", raw)
	}
}
