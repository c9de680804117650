package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview21PreviewNamesQuoted: a write tool whose schema admits names it
// does not declare (additionalProperties: true) lets the model choose the
// argument names of the dry-run preview, which a client shows its user.
// Before, "Would run add_tag with arguments: tag, x, and then delete_all"
// read as a second action; a name that is not a plain word is now quoted,
// and an invisible twin of a declared name is escaped. The handler never
// runs.
func TestReview21PreviewNamesQuoted(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "add_tag", Class: policy.Write}},
		WriteAllowlist: []string{"add_tag"},
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Logger: quiet, Audit: &memSink{}, NoWriteAhead: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	ran := 0
	srv.AddTool(&mcp.Tool{Name: "add_tag", InputSchema: json.RawMessage(`{"type":"object","properties":{"tag":{"type":"string"}},"additionalProperties":true}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran++
			return textResult("tagged"), nil
		})
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	cs := connectPlain(t, srv, nil)
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"tag": "a", "x, and then delete_all": 1}, `Would run add_tag with arguments: tag, "x, and then delete_all"`},
		{map[string]any{"tag": "a", "tog\u200b": 1}, `Would run add_tag with arguments: tag, "tog\u200b"`},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "add_tag", Arguments: tc.args, Meta: mcp.Meta{dryrun.MetaKey: true}})
		if err != nil || res.IsError {
			t.Fatalf("dry run: %v %s", err, mustJSON(res))
		}
		sc, _ := res.StructuredContent.(map[string]any)
		if sc["summary"] != tc.want {
			t.Errorf("preview of %v:\n%v\nwant\n%s", tc.args, sc["summary"], tc.want)
		}
	}
	if ran != 0 {
		t.Errorf("handler ran %d times in dry runs", ran)
	}
}
