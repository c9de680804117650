package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestFailedWriteSaysItMayHaveWritten checks that every refusal of a write
// whose handler ran (an error, a panic, no result, a result its output
// schema refuses) tells the caller the write may have been made and is not
// retryable, and that the same failures of a read say nothing of the kind.
// Before, only timeouts and upstream failures said so.
func TestFailedWriteSaysItMayHaveWritten(t *testing.T) {
	handlers := map[string]mcp.ToolHandler{
		"error": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("boom")
		},
		"panic":     func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { panic("boom") },
		"no_result": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil },
		"malformed": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"n": "x"}}, nil
		},
	}
	for _, class := range []policy.Class{policy.Write, policy.Read} {
		for name, h := range handlers {
			t.Run(class.String()+"/"+name, func(t *testing.T) {
				pol, err := policy.New(policy.Config{
					Tools:          []policy.ToolRule{{Name: "t", Class: class}},
					WriteAllowlist: []string{"t"},
				})
				if err != nil {
					t.Fatal(err)
				}
				g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{NoWriteAhead: true, Logger: quiet})
				if err != nil {
					t.Fatal(err)
				}
				tool := &mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`),
					OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}
				if class == policy.Read {
					tool.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
				}
				wrapped, err := g.Wrap(tool, h)
				if err != nil {
					t.Fatal(err)
				}
				res, err := wrapped(context.Background(), req("t", `{}`))
				if err != nil || res == nil || !res.IsError {
					t.Fatalf("result %v, %v; want a tool error", res, err)
				}
				var body struct {
					Error struct {
						Message   string `json:"message"`
						Retryable bool   `json:"retryable"`
					} `json:"error"`
				}
				raw, _ := json.Marshal(res.StructuredContent)
				if err := json.Unmarshal(raw, &body); err != nil {
					t.Fatal(err)
				}
				says := strings.Contains(body.Error.Message, "may have been made")
				if body.Error.Retryable || says != (class == policy.Write) {
					t.Errorf("%s", raw)
				}
			})
		}
	}
}
