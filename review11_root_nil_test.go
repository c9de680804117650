package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A stand-alone guard built from a nil dependency fails closed on the
// request path, as Authenticate(nil) does, instead of panicking in every
// call (the go-sdk has no recover: the server process would die).
func TestReview11NilGuardDependencies(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    mcpguard.Middleware
	}{
		{"Authorize", mcpguard.Authorize(nil)},
		{"ValidateArguments", mcpguard.ValidateArguments(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran := false
			h := mcpguard.Chain(mcpguard.Authenticate(fixed(bob)), tc.m)(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				ran = true
				return textResult("ran"), nil
			})
			var res *mcp.CallToolResult
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("%s(nil) panicked in a call: %v", tc.name, r)
					}
				}()
				res, err = h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(`{}`)}})
			}()
			if ran || err != nil || res == nil || !res.IsError {
				t.Errorf("%s(nil): result %+v, err %v, handler ran %v; want a refusal", tc.name, res, err, ran)
			}
		})
	}
}

// Install and AddTool of a nil server, and Wrap of a nil handler, are
// errors, as Wrap of a nil tool is, not panics (a nil handler would panic in
// every call, after a write's intent was recorded).
func TestReview11NilServer(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "echo", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("panic: %v", r)
		}
	}()
	if err := g.Install(nil); err == nil {
		t.Error("Install(nil): no error")
	}
	tool := &mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}
	if _, err := g.Wrap(tool, nil); err == nil {
		t.Error("Wrap(tool, nil handler): no error")
	}
	if err := g.AddTool(nil, tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult(""), nil }); err == nil {
		t.Error("AddTool(nil server): no error")
	}
}
