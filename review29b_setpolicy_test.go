package mcpguard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview29bSetPolicyFromHandler: a tool handler may call SetPolicy, on
// an installed guard and on one whose Wrap guards it: it returns (no lock
// of the guard's is held while a handler runs), and the next call is
// decided by the policy it set.
func TestReview29bSetPolicyFromHandler(t *testing.T) {
	a := r29pPolicy(t, policy.Config{Tools: r29pRules(policy.ToolRule{Name: "late", Class: policy.Read})})
	b := r29pPolicy(t, policy.Config{Tools: r29pRules(policy.ToolRule{Name: "late", Class: policy.Read},
		policy.ToolRule{Name: "spare", Class: policy.Read, Roles: []string{"incident"}})})
	obj := map[string]any{"type": "object"}
	// set calls SetPolicy(b) on g, and fails the test if it does not
	// return within 3 seconds.
	set := func(g *mcpguard.Guard) error {
		done := make(chan error, 1)
		go func() { done <- g.SetPolicy(b) }()
		select {
		case err := <-done:
			return err
		case <-time.After(3 * time.Second):
			t.Error("SetPolicy from a tool handler did not return")
			return nil
		}
	}
	ok := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}

	t.Run("Install", func(t *testing.T) {
		srv := mcp.NewServer(&mcp.Implementation{Name: "r29b", Version: "1"}, nil)
		g, err := mcpguard.New(a, fixed(bob), &mcpguard.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		srv.AddTool(&mcp.Tool{Name: "late", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if err := set(g); err != nil {
					return nil, err
				}
				return ok, nil
			})
		srv.AddTool(&mcp.Tool{Name: "spare", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return ok, nil
		})
		if err := g.Install(srv); err != nil {
			t.Fatal(err)
		}
		cs := connectVersion(t, srv, nil, protocolVersions[0])
		if res, err := call(t, cs, "spare", map[string]any{}); codeOf(t, res, err) != "" {
			t.Fatalf("spare before: %s", codeOf(t, res, err))
		}
		if res, err := call(t, cs, "late", map[string]any{}); codeOf(t, res, err) != "" {
			t.Fatalf("late: %s", codeOf(t, res, err))
		}
		if g.Policy() != b {
			t.Fatal("the policy a handler set is not the guard's")
		}
		_, err = call(t, cs, "spare", map[string]any{})
		_, unknown := call(t, cs, "nope", map[string]any{})
		if got, want := codeOf(t, nil, err), strings.ReplaceAll(codeOf(t, nil, unknown), "nope", "spare"); got != want {
			t.Errorf("spare after the handler's SetPolicy: %s, want %s (as an unknown tool)", got, want)
		}
	})

	t.Run("Wrap", func(t *testing.T) {
		g, err := mcpguard.New(a, fixed(bob), &mcpguard.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		wh, err := g.Wrap(&mcp.Tool{Name: "look", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if err := set(g); err != nil {
					return nil, err
				}
				return ok, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		res, err := wh(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "look", Arguments: []byte(`{}`)}})
		if err != nil || res.IsError {
			t.Fatalf("look: %v %s", err, mustJSON(res))
		}
		if g.Policy() != b {
			t.Fatal("the policy a handler set is not the guard's")
		}
	})
}
