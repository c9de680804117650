package mcpguard_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview64sProtocolErrorsDryRunPreview: the SchemaSafeErrors doc tells
// the operator of a client that checks every structured result of a tool
// it listed against the tool's output schema (the TypeScript SDK's, isError
// or not) to set SchemaSafeErrors "(or use ProtocolErrors)". With
// ProtocolErrors alone, the dry run of a typed write tool (not DryRunAware)
// is still answered as a tool error whose StructuredContent is the
// simulated result, which does not fit the schema: such a client throws
// -32602 in place of the preview, which ProtocolErrors was to avoid.
func TestReview64sProtocolErrorsDryRunPreview(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "order"},
		func(context.Context, *mcp.CallToolRequest, orderIn) (*mcp.CallToolResult, orderOut, error) {
			t.Error("the handler ran for a dry run")
			return nil, orderOut{OrderID: "O-1", Status: "placed"}, nil
		})
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "order", Class: policy.Write}},
		WriteAllowlist: []string{"order"},
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := &mcpguard.Options{
		Audit: &memSink{}, DryRun: true, ProtocolErrors: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	cs := connectInstalled(t, srv, pol, opts, nil, "")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "order", Arguments: map[string]any{"item": "x"}})
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if !res.IsError {
		t.Fatalf("the simulated result was a success: %+v", res)
	}
	if res.StructuredContent != nil {
		t.Errorf("with ProtocolErrors, the dry-run preview of a typed tool keeps StructuredContent %v, "+
			"which its output schema refuses (a schema-checking client throws -32602)", res.StructuredContent)
	}
}
