package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview56DryRunResultCheckedItself: whether a write tool's output
// schema refuses its simulated dry-run result was judged once, on the
// summary "Would run <tool>"; the result sent names the call's arguments
// ("... with arguments: amount, reason"), so a schema bounding the summary
// passed the probe and the dry run answered, as a success, a result the
// schema refuses, which a client that checks results rejects. The result
// sent is checked now, and answered as a tool error when refused.
func TestReview56DryRunResultCheckedItself(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Write}},
		WriteAllowlist: []string{"pay"}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
		return alice, nil
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{"type": "object", "properties": map[string]any{
		"summary": map[string]any{"type": "string", "maxLength": 31},
	}}
	h, err := g.Wrap(&mcp.Tool{Name: "pay", InputSchema: map[string]any{"type": "object", "properties": map[string]any{
		"amount": map[string]any{"type": "number"}, "reason": map[string]any{"type": "string"}}}, OutputSchema: out},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			t.Error("the handler ran on a dry run")
			return textResult("paid"), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args    string
		refused bool
	}{{`{}`, false}, {`{"amount":1,"reason":"x"}`, true}} {
		res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{
			Name: "pay", Arguments: json.RawMessage(c.args), Meta: mcp.Meta{dryrun.MetaKey: true}}})
		if err != nil {
			t.Fatal(err)
		}
		sc, _ := res.StructuredContent.(map[string]any)
		summary, _ := sc["summary"].(string)
		if res.IsError != c.refused {
			t.Errorf("dry run of %s: IsError %v with summary %q (%d characters, the schema's most 31), want %v",
				c.args, res.IsError, summary, len(summary), c.refused)
		}
	}
}
