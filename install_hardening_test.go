package mcpguard_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func reviewOK(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return textResult("ok"), nil
}

// TestListCursorHidesHiddenTool: the go-sdk's tools/list cursor is
// base64(gob{LastUID: <name of the page's last tool>}); a cursor passed
// through would name a hidden tool that ends a page. The guard answers in
// one filtered page, without a cursor.
func TestListCursorHidesHiddenTool(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "paged", Version: "1"}, &mcp.ServerOptions{PageSize: 1})
	obj := json.RawMessage(`{"type":"object"}`)
	srv.AddTool(&mcp.Tool{Name: "admin_secret_export", InputSchema: obj}, reviewOK)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: obj}, reviewOK)
	guardWithPolicy(t, srv, policy.Config{
		Tools: []policy.ToolRule{
			{Name: "admin_secret_export", Class: policy.Read},
			{Name: "echo", Class: policy.Read},
		},
		RoleRules: []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
	})
	cs := connectPlain(t, srv, nil)
	// The hidden tool is indeed hidden from the call path.
	if _, err := call(t, cs, "admin_secret_export", map[string]any{}); wireError(err) == nil {
		t.Fatalf("hidden tool callable: %v", err)
	}
	cursor := ""
	var seen []string
	for range 10 {
		res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range res.Tools {
			seen = append(seen, tl.Name)
		}
		if res.NextCursor == "" {
			break
		}
		raw, _ := base64.URLEncoding.DecodeString(res.NextCursor)
		if strings.Contains(string(raw)+res.NextCursor, "admin_secret_export") {
			t.Errorf("tools/list for bob (who may not see admin_secret_export) returned cursor %q, which decodes to %q: the hidden tool's name", res.NextCursor, raw)
		}
		cursor = res.NextCursor
	}
	if strings.Join(seen, ",") != "echo" {
		t.Errorf("bob saw %v, want [echo]", seen)
	}
}

// TestRefusedToolNotListed: a tool the guard refused (its ReadOnlyHint
// contradicts its rule), which answers TOOL_NOT_FOUND to every call, is not
// offered in tools/list: neither right after it is added nor while the
// registry is stale after a tools/list_changed notification.
func TestRefusedToolNotListed(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	newServer := func(t *testing.T) *mcp.Server {
		srv := mcp.NewServer(&mcp.Implementation{Name: "late", Version: "1"}, nil)
		srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: obj}, reviewOK)
		guardWithPolicy(t, srv, policy.Config{Tools: []policy.ToolRule{
			{Name: "echo", Class: policy.Read},
			{Name: "bad", Class: policy.Read},
			{Name: "other", Class: policy.Read},
		}})
		return srv
	}
	listed := func(t *testing.T, cs *mcp.ClientSession, name string) bool {
		t.Helper()
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range res.Tools {
			if tl.Name == name {
				return true
			}
		}
		return false
	}
	// "bad" is a read in the policy but says it writes: refused.
	badTool := &mcp.Tool{Name: "bad", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false}}

	t.Run("added_after_install", func(t *testing.T) {
		srv := newServer(t)
		cs := connectPlain(t, srv, nil)
		srv.AddTool(badTool, reviewOK)
		if _, err := call(t, cs, "bad", map[string]any{}); wireError(err) == nil {
			t.Fatalf("refused tool callable: %v", err)
		}
		if listed(t, cs, "bad") {
			t.Error("tools/list offers \"bad\", a tool every call of which answers TOOL_NOT_FOUND")
		}
	})

	t.Run("registry_stale", func(t *testing.T) {
		srv := newServer(t)
		cs, waitChanged := connectWatchingChanges(t, srv)
		srv.AddTool(badTool, reviewOK)
		waitChanged()
		// The call re-lists (the registry is stale) and refuses "bad".
		if _, err := call(t, cs, "bad", map[string]any{}); wireError(err) == nil {
			t.Fatalf("refused tool callable: %v", err)
		}
		if listed(t, cs, "bad") {
			t.Fatal("refused tool listed with a fresh registry")
		}
		// An unrelated change: the registry goes stale, nothing else.
		srv.AddTool(&mcp.Tool{Name: "other", InputSchema: obj}, reviewOK)
		waitChanged()
		if listed(t, cs, "bad") {
			t.Error("after an unrelated tools/list_changed, tools/list offers the refused tool \"bad\" again")
		}
		if _, err := call(t, cs, "bad", map[string]any{}); wireError(err) == nil {
			t.Errorf("refused tool callable: %v", err)
		}
	})
}

// TestNewDefaultRuleNeedsConfirmer: a policy whose Default rule has Confirm
// needs Options.Confirmer as much as one whose named rule does: New refuses
// it without one.
func TestNewDefaultRuleNeedsConfirmer(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Default:        &policy.ToolRule{Class: policy.Write, Confirm: true},
		WriteAllowlist: []string{"*"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Logger: quiet}); err == nil {
		t.Error("New accepted a policy whose default rule needs confirmation with a nil Options.Confirmer")
	}
}
