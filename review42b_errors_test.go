package mcpguard_test

import (
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// JSONRPCError answers TOOL_NOT_FOUND with the code it is given when that
// is not zero (Options.NotFoundCode), else with the contract's -32602; the
// code of any other denial is the contract's, whatever it is given.
func TestReview42bJSONRPCErrorNotFoundCode(t *testing.T) {
	cases := []struct {
		name         string
		code         mcpguard.Code
		notFoundCode int64
		want         int64
	}{
		{"not_found_default", mcpguard.CodeToolNotFound, 0, jsonrpc.CodeInvalidParams},
		{"not_found_method_not_found", mcpguard.CodeToolNotFound, jsonrpc.CodeMethodNotFound, jsonrpc.CodeMethodNotFound},
		{"not_found_one", mcpguard.CodeToolNotFound, 1, 1},
		{"forbidden_default", mcpguard.CodeForbidden, 0, -32001},
		{"forbidden_ignores_not_found_code", mcpguard.CodeForbidden, jsonrpc.CodeMethodNotFound, -32001},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := mcpguard.Deny(tc.code, "m").JSONRPCError(tc.notFoundCode).Code; got != tc.want {
				t.Errorf("Deny(%s, \"m\").JSONRPCError(%d).Code = %d, want %d", tc.code, tc.notFoundCode, got, tc.want)
			}
		})
	}
}
