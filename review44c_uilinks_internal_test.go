package mcpguard

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview44cUILinksOvertakenByChange: the server's tools change while
// the guard lists them to judge a UI resource (the registry is invalidated
// during the listing, so the listing is not installed): a tool the registry
// lacks is judged from the listing all the same, so the UI resource of a
// tool added meanwhile that the caller may not see is hidden from it (here
// the tool names one resource), and shown to a caller who may see the tool.
func TestReview44cUILinksOvertakenByChange(t *testing.T) {
	g := review44cGuard(t, policy.ToolRule{Name: "open_app", Class: policy.Read},
		policy.ToolRule{Name: "admin_app", Class: policy.Read, Roles: []string{"admin"}})
	schema := json.RawMessage(`{"type":"object"}`)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	open := &mcp.Tool{Name: "open_app", InputSchema: schema, Annotations: ro,
		Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://open/app"}}}
	admin := &mcp.Tool{Name: "admin_app", InputSchema: schema, Annotations: ro,
		Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://admin/app"}}}
	g.update([]*mcp.Tool{open})
	next := func(_ context.Context, method string, _ mcp.Request) (mcp.Result, error) {
		if method != "tools/list" {
			t.Fatalf("listed %s, want only tools/list", method)
		}
		g.reg.invalidate() // admin_app was added while the tools were listed
		return &mcp.ListToolsResult{Tools: []*mcp.Tool{open, admin}}, nil
	}
	bob := &policy.Principal{Subject: "bob"}
	alice := &policy.Principal{Subject: "alice", Roles: []string{"admin"}}
	for _, tt := range []struct {
		who  *policy.Principal
		uri  string
		want bool
	}{
		{bob, "ui://admin/app", true},
		{bob, "ui://open/app", false},
		{alice, "ui://admin/app", false},
	} {
		got, err := g.hides(context.Background(), next, nil, tt.who, tt.uri)
		if err != nil || got != tt.want {
			t.Errorf("hides(%s, %s) = %v, %v; want %v", tt.who.Subject, tt.uri, got, err, tt.want)
		}
	}
	if _, ok := g.reg.byName["admin_app"]; ok {
		t.Errorf("the listing overtaken by a change was installed in the registry")
	}
}

// TestReview44cUILinksChangedTool: a tool the server replaced since the
// registry listed it (the same name, now naming a UI resource) is judged as
// the listing has it, not by the registry's entry: its UI resource is hidden
// from a caller who may not see the tool.
func TestReview44cUILinksChangedTool(t *testing.T) {
	g := review44cGuard(t, policy.ToolRule{Name: "admin_app", Class: policy.Read, Roles: []string{"admin"}})
	schema := json.RawMessage(`{"type":"object"}`)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	g.update([]*mcp.Tool{{Name: "admin_app", InputSchema: schema, Annotations: ro}})
	now := &mcp.Tool{Name: "admin_app", InputSchema: schema, Annotations: ro,
		Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://admin/app"}}}
	next := func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return &mcp.ListToolsResult{Tools: []*mcp.Tool{now}}, nil
	}
	got, err := g.hides(context.Background(), next, nil, &policy.Principal{Subject: "bob"}, "ui://admin/app")
	if err != nil || !got {
		t.Errorf("hides(bob, ui://admin/app) of the replaced tool = %v, %v; want true", got, err)
	}
}

// review44cGuard returns a guard, not installed, of a policy of tools whose
// hides is called with the caller given.
func review44cGuard(t *testing.T, tools ...policy.ToolRule) *Guard {
	t.Helper()
	pol, err := policy.New(policy.Config{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(pol, AuthenticatorFunc(func(context.Context, mcp.Request) (*Identity, error) { return nil, nil }),
		&Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return g
}
