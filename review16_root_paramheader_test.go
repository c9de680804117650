package mcpguard_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// regionSchema binds its "region" argument to the HTTP header
// Mcp-Param-Region (SEP-2243), nested one level down in "where.zone" to
// Mcp-Param-Zone.
var regionSchema = json.RawMessage(`{"type":"object","properties":{
	"region":{"type":"string","x-mcp-header":"Region"},
	"where":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}}}}`)

var nestedOnlySchema = json.RawMessage(`{"type":"object","properties":{
	"where":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}}}}`)

func paramHeaderPolicy(show bool) policy.Config {
	return policy.Config{
		Tools: []policy.ToolRule{
			{Name: "admin_lookup", Class: policy.Read},
			{Name: "admin_zone", Class: policy.Read},
			{Name: "lookup", Class: policy.Read},
		},
		RoleRules:     []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		ShowForbidden: show,
	}
}

func regionTool(name string, schema json.RawMessage) (*mcp.Tool, mcp.ToolHandler) {
	return &mcp.Tool{Name: name, InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("eu-1"), nil
		}
}

// TestReview16ParamHeadersOfHiddenTool: go-sdk v1.8.0's Streamable HTTP
// server checks the Mcp-Param-* headers of a tools/call on protocol
// 2026-07-28 against the tool's x-mcp-header annotations before any
// middleware runs (before the guard authenticates the caller, too). For a
// tool the caller may not see, its 400 "header mismatch: missing
// Mcp-Param-Region header for parameter "region"" tells the tool from an
// unknown one, whose answer is the guard's -32602 "unknown tool". So a tool
// with such annotations that the policy hides from some caller is refused
// at Install (and by Wrap), whether the annotation is at the top level or
// nested; one every caller may see, or a policy that shows forbidden tools
// (FORBIDDEN tells of them anyway), is accepted.
func TestReview16ParamHeadersOfHiddenTool(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tool   string
		schema json.RawMessage
	}{
		{"top_level", "admin_lookup", regionSchema},
		{"nested", "admin_zone", nestedOnlySchema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			srv.AddTool(regionTool(tc.tool, tc.schema))
			pol, err := policy.New(paramHeaderPolicy(false))
			if err != nil {
				t.Fatal(err)
			}
			g, err := mcpguard.New(pol, r16Tokens(), &mcpguard.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if _, werr := g.Wrap(regionTool(tc.tool, tc.schema)); werr == nil || !strings.Contains(werr.Error(), "x-mcp-header") {
				t.Errorf("Wrap of a hidden tool with x-mcp-header: %v, want an error naming x-mcp-header", werr)
			}
			ierr := g.Install(srv)
			if ierr != nil {
				if !strings.Contains(ierr.Error(), tc.tool) || !strings.Contains(ierr.Error(), "x-mcp-header") {
					t.Errorf("Install: %v, want an error naming %s and x-mcp-header", ierr, tc.tool)
				}
				return
			}
			// Installed: show what a prober learns.
			hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
			defer hs.Close()
			for _, token := range []string{"bob-token", ""} {
				c := &rawClient{t: t, url: hs.URL, version: r16New, token: token}
				args := map[string]any{"region": "eu", "where": map[string]any{"zone": "a"}}
				hidden := c.postID(1, "tools/call", map[string]any{"name": tc.tool, "arguments": args}, nil)
				unknown := c.postID(1, "tools/call", map[string]any{"name": "admin_nothere", "arguments": args}, nil)
				if hidden.status != unknown.status || string(hidden.resp) != string(unknown.resp) {
					t.Errorf("token %q: Install accepted %s, and a caller who may not see it tells it from an unknown tool:\nhidden:  %s\nunknown: %s", token, tc.tool, hidden, unknown)
				}
			}
		})
	}
	t.Run("visible_to_all_or_shown", func(t *testing.T) {
		for _, show := range []bool{false, true} {
			srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			srv.AddTool(regionTool("lookup", regionSchema))
			if show {
				srv.AddTool(regionTool("admin_lookup", regionSchema))
			}
			pol, err := policy.New(paramHeaderPolicy(show))
			if err != nil {
				t.Fatal(err)
			}
			g, err := mcpguard.New(pol, r16Tokens(), &mcpguard.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Install(srv); err != nil {
				t.Fatalf("show forbidden %v: Install: %v", show, err)
			}
			hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
			defer hs.Close()
			// The go-sdk client sends the Mcp-Param headers itself.
			cs := httpClient(t, hs.URL, "bob-token", "", clientOpts{})
			if _, err := cs.ListTools(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "lookup", Arguments: map[string]any{"region": "eu"}})
			if err != nil || res.IsError {
				t.Errorf("show forbidden %v: a call of a tool with x-mcp-header every caller may see: %v %s", show, err, mustJSON(res))
			}
		}
	})
}

// TestReview16ParamHeadersOfLateHiddenTool: such a tool added after
// Install is refused at call time, for every caller, and listed to none.
func TestReview16ParamHeadersOfLateHiddenTool(t *testing.T) {
	s := newR16Server(t, r16New, func(*mcp.Server) {}, paramHeaderPolicy(false), nil)
	s.srv.AddTool(regionTool("admin_lookup", regionSchema))
	time.Sleep(relistWait)
	cs := httpClient(t, s.url, "alice-token", "", clientOpts{})
	lr, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lr.Tools) != 0 {
		t.Errorf("listed to the admin: %s", mustJSON(lr))
	}
	// The go-sdk client sends no Mcp-Param headers for a tool it was not
	// listed: the call is made by hand, headers and all.
	c := s.connect(t, r16New, "alice-token")
	a := c.callTool("admin_lookup", map[string]any{"region": "eu"}, http.Header{"Mcp-Param-Region": {"eu"}})
	if a.msg.Error == nil || a.msg.Error.Message != `unknown tool "admin_lookup"` {
		t.Errorf("the admin's call: %s, want unknown tool", a)
	}
	if logs := s.logs.String(); !strings.Contains(logs, "x-mcp-header") {
		t.Errorf("the refusal is not logged with its reason: %s", logs)
	}
}
