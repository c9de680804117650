package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview44aValidateOutputPassesThrough: ValidateOutput hands on, as the
// handler gave them, a handler's error (with or without a result beside
// it), a tool error and a result that asks for more input, even when their
// structured content is not what the output schema asks for; and refuses
// such content in a plain result.
func TestReview44aValidateOutputPassesThrough(t *testing.T) {
	v, err := mcpguard.NewOutputValidator(json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`))
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	bad := map[string]any{"id": 7}
	for name, tc := range map[string]struct {
		res    *mcp.CallToolResult
		err    error
		refuse bool
	}{
		"error":             {err: boom},
		"error_and_result":  {res: &mcp.CallToolResult{StructuredContent: bad}, err: boom},
		"tool_error":        {res: &mcp.CallToolResult{IsError: true, StructuredContent: bad}},
		"asks_for_input":    {res: &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{}}},
		"input_and_content": {res: &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{}, StructuredContent: bad}},
		"malformed":         {res: &mcp.CallToolResult{StructuredContent: bad}, refuse: true},
	} {
		t.Run(name, func(t *testing.T) {
			h := mcpguard.ValidateOutput(v)(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return tc.res, tc.err
			})
			res, err := h(context.Background(), req("t", `{}`))
			if tc.refuse {
				if code := codeOf(t, res, err); code != string(mcpguard.CodeInvalidResponse) {
					t.Errorf("got %q, want INVALID_RESPONSE", code)
				}
				return
			}
			if res != tc.res || err != tc.err {
				t.Errorf("got %s, %v; want the handler's %s, %v", mustJSON(res), err, mustJSON(tc.res), tc.err)
			}
		})
	}
}
