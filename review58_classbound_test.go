package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview58SealedStateBindsTheClass: a read whose handler asked for more
// input hands the client a sealed state for its next round, which counts
// and costs nothing (the first round was charged the logical call). When
// the policy makes the tool a write meanwhile (Guard.SetPolicy), that next
// round ran as the write, uncharged: the state did not bind the rule's
// class. It is refused now (INVALID_ARGUMENTS: call again), and a new call
// is charged as the write it is.
func TestReview58SealedStateBindsTheClass(t *testing.T) {
	mk := func(class policy.Class) *policy.Policy {
		t.Helper()
		cfg := policy.Config{Tools: []policy.ToolRule{{Name: "ask", Class: class}}}
		if class == policy.Write {
			cfg.WriteAllowlist = []string{"ask"}
		}
		p, err := policy.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	g, err := mcpguard.New(mk(policy.Read), fixed(bob), &mcpguard.Options{Logger: quiet, Audit: &memSink{}})
	if err != nil {
		t.Fatal(err)
	}
	done := 0
	h, err := g.Wrap(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if len(req.Params.InputResponses) == 0 {
				return &mcp.CallToolResult{
					InputRequests: mcp.InputRequestMap{"why": &mcp.ElicitParams{Mode: "form", Message: "why?",
						RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}},
					RequestState: "mine",
				}, nil
			}
			done++
			return textResult("done"), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	first, err := h(context.Background(), req("ask", `{}`))
	if err != nil || first.RequestState == "" {
		t.Fatalf("first round: %v %s", err, mustJSON(first))
	}
	if err := g.SetPolicy(mk(policy.Write)); err != nil {
		t.Fatal(err)
	}
	r := req("ask", `{}`)
	r.Params.RequestState = first.RequestState
	r.Params.InputResponses = mcp.InputResponseMap{"why": &mcp.ElicitResult{Action: "accept"}}
	res, err := h(context.Background(), r)
	if got := codeOf(t, res, err); got != "INVALID_ARGUMENTS" || done != 0 {
		t.Errorf("the next round of a read, the tool a write now: %q, handler finished %d times; want INVALID_ARGUMENTS and no run", got, done)
	}
}
