package mcpguard_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkReview31Nested: a guarded read whose handler calls another
// guarded read in-process with its context (the path whose inner records
// name a parent), audited to a buffered JSONL sink; per outer call.
func BenchmarkReview31Nested(b *testing.B) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{
		{Name: "lookup", Class: policy.Read}, {Name: "trigger_refund", Class: policy.Read}}})
	if err != nil {
		b.Fatal(err)
	}
	sink, err := audit.OpenJSONL(filepath.Join(b.TempDir(), "audit.jsonl"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sink.Close() })
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	inner, err := g.Wrap(&mcp.Tool{Name: "trigger_refund", InputSchema: benchSchema, Annotations: ro}, noop)
	if err != nil {
		b.Fatal(err)
	}
	ir := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "trigger_refund", Arguments: benchArgs}}
	outer, err := g.Wrap(&mcp.Tool{Name: "lookup", InputSchema: map[string]any{"type": "object"}, Annotations: ro},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return inner(ctx, ir) })
	if err != nil {
		b.Fatal(err)
	}
	r := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "lookup", Arguments: []byte(`{}`)}}
	ctx := context.Background()
	if res, _ := outer(ctx, r); res.IsError {
		b.Fatalf("nested call refused: %s", mustJSON(res))
	}
	b.ReportAllocs()
	for b.Loop() {
		outer(ctx, r)
	}
}
