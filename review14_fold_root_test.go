package mcpguard_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview14FoldedNameGetsDefaultToo: the go-sdk dispatches tool names
// exactly, so a registered tool "Status" is another tool than "status".
// The policy opens "status" to everyone and keeps every other tool, by its
// default rule, for admins: "Status", whose name equals "status" only
// under case folding, must not be listed to or run by a caller the
// default rule refuses.
func TestReview14FoldedNameGetsDefaultToo(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	for _, name := range []string{"status", "Status"} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ran"}}}, nil
			})
	}
	pol, err := policy.New(policy.Config{
		Tools:   []policy.ToolRule{{Name: "status", Class: policy.Read}},
		Default: &policy.ToolRule{Class: policy.Read, Roles: []string{"admin"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	connect := func(id *mcpguard.Identity) *rawSession {
		return rawConnectTo(t, srv, func(ss *mcp.ServerSession) {
			auth.mu.Lock()
			auth.ids[ss] = id
			auth.mu.Unlock()
		})
	}
	listed := func(r *rawSession) []string {
		res, werr := r.call("tools/list", `{}`)
		if werr != nil {
			t.Fatalf("tools/list: %v", werr)
		}
		var lr mcp.ListToolsResult
		if err := json.Unmarshal(res, &lr); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range lr.Tools {
			names = append(names, tl.Name)
		}
		slices.Sort(names)
		return names
	}
	viewer := connect(bob)
	if got := listed(viewer); !slices.Equal(got, []string{"status"}) {
		t.Errorf("bob (no admin) is listed %q, want only status", got)
	}
	if res, werr := viewer.call("tools/call", `{"name":"Status","arguments":{}}`); werr == nil || werr.Code == 0 {
		t.Errorf("bob calls Status: %s, want TOOL_NOT_FOUND", res)
	}
	admin := connect(alice)
	if got := listed(admin); !slices.Equal(got, []string{"Status", "status"}) {
		t.Errorf("alice (admin) is listed %q, want both", got)
	}
}
