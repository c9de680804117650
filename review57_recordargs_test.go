package mcpguard_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview57RecordArgsTypoRefused: ToolOptions.RecordArgs naming an
// argument the tool's closed input schema does not have ("amout" for
// "amount") was accepted by New, Wrap and Install, and the audit trail then
// never recorded the field the operator asked for. Such a tool is refused
// now, naming both, as a policy argument limit on a missing argument is;
// a schema that does not say plainly which arguments a call can carry
// (here, additionalProperties true) is not judged.
func TestReview57RecordArgsTypoRefused(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "refund", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]any{"amount": map[string]any{"type": "number"}}
	closed := map[string]any{"type": "object", "properties": props}
	open := map[string]any{"type": "object", "properties": props, "additionalProperties": true}
	h := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil }
	for _, c := range []struct {
		name    string
		schema  map[string]any
		record  []string
		wantErr string
	}{
		{"typo", closed, []string{"amout"}, `RecordArgs (Options.Tools) names argument "amout", which its input schema does not have (it has "amount")`},
		{"right", closed, []string{"amount"}, ""},
		{"open schema", open, []string{"amout"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := &mcpguard.Options{Logger: quiet, Tools: map[string]mcpguard.ToolOptions{"refund": {RecordArgs: c.record}}}
			for _, way := range []string{"Wrap", "Install"} {
				g, err := mcpguard.New(pol, fixed(bob), opts)
				if err != nil {
					t.Fatal(err)
				}
				tool := &mcp.Tool{Name: "refund", InputSchema: c.schema}
				if way == "Wrap" {
					_, err = g.Wrap(tool, h)
				} else {
					srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
					srv.AddTool(tool, h)
					err = g.Install(srv)
				}
				switch {
				case c.wantErr == "" && err != nil:
					t.Errorf("%s: %v, want no error", way, err)
				case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
					t.Errorf("%s: %v, want an error saying %s", way, err, c.wantErr)
				}
			}
		})
	}
}
