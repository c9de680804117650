package dryrun_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/dryrun"
)

// TestRequestedFailsClosed: a client that asks for a preview in a way the
// guard does not read exactly (the string "true", 1, a key in another
// letter case) must get a preview, not the real write. Only an absent key
// or the JSON boolean false lets the write run; a request that is unclear
// is a request for a preview, which can only make a call do less.
func TestRequestedFailsClosed(t *testing.T) {
	tests := []struct {
		name string
		json string
		want bool
	}{
		{"json_true", `{"io.mcpguard/dryRun":true}`, true},
		{"string_true", `{"io.mcpguard/dryRun":"true"}`, true},
		{"string_yes", `{"io.mcpguard/dryRun":"yes"}`, true},
		{"number_one", `{"io.mcpguard/dryRun":1}`, true},
		{"object", `{"io.mcpguard/dryRun":{"on":true}}`, true},
		{"null", `{"io.mcpguard/dryRun":null}`, true},
		{"string_false", `{"io.mcpguard/dryRun":"false"}`, true},
		{"lower_case_key", `{"io.mcpguard/dryrun":true}`, true},
		{"upper_case_key", `{"IO.MCPGUARD/DRYRUN":true}`, true},
		{"case_variant_beside_false", `{"io.mcpguard/dryRun":false,"io.mcpguard/DryRun":true}`, true},
		{"json_false", `{"io.mcpguard/dryRun":false}`, false},
		{"case_variant_false", `{"io.mcpguard/dryrun":false}`, false},
		{"absent", `{"progressToken":"p1"}`, false},
		{"other_namespace", `{"com.example/dryRun":true}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var meta mcp.Meta
			if err := json.Unmarshal([]byte(tt.json), &meta); err != nil {
				t.Fatal(err)
			}
			if got := dryrun.Requested(meta); got != tt.want {
				t.Errorf("Requested(%s) = %v, want %v", tt.json, got, tt.want)
			}
		})
	}
}

// TestStringTrueDoesNotWrite: end to end over a real server and client,
// a write whose client asked for a preview with the string "true" does not
// reach the downstream.
func TestStringTrueDoesNotWrite(t *testing.T) {
	ctx := context.Background()
	writes := 0
	refund := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		writes++
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refunded"}}}, nil
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "shop"}, nil)
	s.AddTool(&mcp.Tool{Name: "refund", InputSchema: map[string]any{"type": "object"}}, guard(false, false, refund))
	cs := connect(ctx, s)
	defer cs.Close()

	for _, v := range []any{"true", 1, "TRUE"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{
			Name: "refund", Arguments: map[string]any{"amount": 5},
			Meta: mcp.Meta{dryrun.MetaKey: v},
		})
		if err != nil {
			t.Fatalf("CallTool(_meta %v): %v", v, err)
		}
		if writes != 0 {
			t.Fatalf("CallTool(_meta %s=%#v) ran the write (%d writes), want a preview", dryrun.MetaKey, v, writes)
		}
		if sc, _ := res.StructuredContent.(map[string]any); sc["dry_run"] != true {
			t.Errorf("CallTool(_meta %#v) = %+v, want a simulated result", v, res.StructuredContent)
		}
	}
	// The JSON boolean false runs it.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "refund", Arguments: map[string]any{}, Meta: mcp.Meta{dryrun.MetaKey: false}}); err != nil {
		t.Fatal(err)
	}
	if writes != 1 {
		t.Errorf("after a call with _meta false: %d writes, want 1", writes)
	}
}
