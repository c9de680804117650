package mcpguard

import (
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gone tells the go-sdk's answer for an unknown tool, the one called,
// however wrapped, from any other error: another tool's, another code's,
// one with data, or one that is no JSON-RPC error.
func TestReview41cGone(t *testing.T) {
	sdk := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown tool "a"`}
	call := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "a"}}
	cases := []struct {
		name string
		err  error
		req  *mcp.CallToolRequest
		want bool
	}{
		{"sdk_answer", sdk, call, true},
		{"wrapped", fmt.Errorf("below: %w", sdk), call, true},
		{"other_tool", sdk, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "b"}}, false},
		{"other_code", &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: `unknown tool "a"`}, call, false},
		{"with_data", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown tool "a"`, Data: []byte(`1`)}, call, false},
		{"plain_error", errors.New(`unknown tool "a"`), call, false},
		{"no_params", sdk, &mcp.CallToolRequest{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := gone(tc.err, tc.req); got != tc.want {
				t.Errorf("gone(%v, %+v) = %v, want %v", tc.err, tc.req.Params, got, tc.want)
			}
		})
	}
}

// housekeeping names the go-sdk's own methods, which a session makes
// whoever its caller, and no other.
func TestReview41cHousekeeping(t *testing.T) {
	for _, m := range []string{"initialize", "ping", "logging/setLevel", "server/discover",
		"notifications/initialized", "notifications/cancelled", "notifications/progress", "notifications/roots/list_changed"} {
		if !housekeeping(m) {
			t.Errorf("housekeeping(%q) = false, want true", m)
		}
	}
	for _, m := range []string{"", "tools/call", "tools/list", "prompts/get", "resources/read",
		"notifications/acme/poke", "acme/poke", "Initialize"} {
		if housekeeping(m) {
			t.Errorf("housekeeping(%q) = true, want false", m)
		}
	}
}
