package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAuditToolErrorRecord checks what audit.Event.Code's doc says of a
// tool that answers with a tool error (isError, for the model to read): the
// guard allowed the call, so its outcome record is allowed with Code "" and
// Detail "tool reported an error", through a Guard and through the
// stand-alone Audit middleware; the result reaches the caller unchanged.
func TestAuditToolErrorRecord(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "lookup", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	tool := &mcp.Tool{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`)}
	toolErr := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such order"}}}, nil
	}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "lookup", Arguments: json.RawMessage(`{}`)}}
	type rec struct {
		Allowed      bool
		Code, Detail string
	}
	want := []rec{{Allowed: true, Code: "", Detail: "tool reported an error"}}
	check := func(t *testing.T, res *mcp.CallToolResult, err error, evs []audit.Event) {
		t.Helper()
		if err != nil || res == nil || !res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "no such order" {
			t.Fatalf("result %+v, %v: want the tool's own error result", res, err)
		}
		var got []rec
		for _, e := range evs {
			got = append(got, rec{e.Allowed, e.Code, e.Detail})
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("records (-want +got):\n%s", diff)
		}
	}

	t.Run("Guard", func(t *testing.T) {
		sink := &memSink{}
		g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		h, err := g.Wrap(tool, toolErr)
		if err != nil {
			t.Fatal(err)
		}
		res, err := h(context.Background(), req)
		check(t, res, err, sink.all())
	})
	t.Run("Audit", func(t *testing.T) {
		sink := &memSink{}
		m := mustAudit(t, sink, &mcpguard.Options{Logger: quiet})
		h := m(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return toolErr(ctx, req)
		})
		res, err := h(context.Background(), req)
		check(t, res, err, sink.all())
	})
}
