package mcpguard_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview56ArgLimitOnMissingArgument: a policy's argument limit naming
// an argument the tool's input schema does not have (the Go field's name,
// "Amount", for the JSON "amount") was accepted by New, Wrap and Install;
// every call by a caller the limit applies to was then refused FORBIDDEN,
// "argument Amount must be a number", which points away from the
// configuration. Where the schema says plainly which arguments a call can
// carry, registering the tool now fails, naming the argument and the
// schema's; where it does not (patternProperties, lenient mode without
// additionalProperties false), nothing changes.
func TestReview56ArgLimitOnMissingArgument(t *testing.T) {
	pol := func(field string) *policy.Policy {
		p, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "refund", Class: policy.Read,
			ArgLimits: []policy.ArgLimit{{Field: field, Max: 100, ExemptRoles: []string{"admin"}}}}}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	props := map[string]any{"amount": map[string]any{"type": "number"}, "reason": map[string]any{"type": "string"}}
	for _, c := range []struct {
		name    string
		field   string
		schema  map[string]any
		lenient bool
		want    string // "" for no error
	}{
		{"go_field_name", "Amount", map[string]any{"type": "object", "properties": props}, false,
			`the policy limits argument "Amount", which its input schema does not have (it has "amount", "reason")`},
		{"closed_lenient", "Amount", map[string]any{"type": "object", "properties": props, "additionalProperties": false}, true,
			`argument "Amount"`},
		{"right_name", "amount", map[string]any{"type": "object", "properties": props}, false, ""},
		{"open_lenient", "Amount", map[string]any{"type": "object", "properties": props}, true, ""},
		{"pattern", "Amount", map[string]any{"type": "object", "properties": props,
			"patternProperties": map[string]any{"^A": map[string]any{"type": "number"}}}, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var opts *mcpguard.Options
			if c.lenient {
				opts = &mcpguard.Options{Validation: &mcpguard.ValidationOptions{Lenient: true}}
			}
			g, err := mcpguard.New(pol(c.field), &sessionAuth{}, opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = g.Wrap(&mcp.Tool{Name: "refund", InputSchema: c.schema},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil })
			switch {
			case c.want == "" && err != nil:
				t.Errorf("Wrap: %v, want the tool accepted", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("Wrap: %v, want an error containing %q", err, c.want)
			}
		})
	}
}
