package mcpguard_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview62hToolErrorResult: a handler that refuses its call with a
// tool-error result rather than an error. The package doc: a handler "that
// returns a [*DenialError], or a result carrying one (set with SetError, as
// [DenialError.Result] does), refuses the call with it ... For a write it
// is not retryable (it may have written)", and a result carrying any other
// error set with SetError is the handler's failure, INTERNAL; Recover's
// doc: a write's own refusal is answered not retryable "as a Guard knows";
// Audit's: "A handler's error is recorded as a Guard records it: "handler
// error", or "refused by the tool" for a *DenialError of its own"; steps.go
// and execute.go: a chain "whose records and refusals are the Guard's".
// The chain of stand-alone steps passes such a result through untouched:
//   - a write's DenialError.Result() with a retryable code
//     (UPSTREAM_UNAVAILABLE) reaches the client retryable, where the Guard
//     answers it not retryable: the client repeats a write that may have
//     been made;
//   - its record has no detail ("refused by the tool" in the Guard's);
//   - a result carrying a plain error (SetError) reaches the client as the
//     handler's text, recorded allowed with "tool reported an error", where
//     the Guard refuses INTERNAL "the tool failed" (for a write, "the write
//     may have been made") and records it refused, "handler error".
func TestReview62hToolErrorResult(t *testing.T) {
	denialResult := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcpguard.Deny(mcpguard.CodeUpstreamUnavailable, "down").Result(), nil
	}
	setError := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r := &mcp.CallToolResult{}
		r.SetError(errors.New("dial db: password=hunter2"))
		return r, nil
	}
	for _, tc := range []struct {
		name, tool string
		h          func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error)
	}{
		{"denial-result/write", "r56_write", denialResult},
		{"denial-result/read", "r56_read", denialResult},
		{"seterror/write", "r56_write", setError},
		{"seterror/read", "r56_read", setError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r62hCompare(t, r62hSetup{handler: tc.h}, tc.tool)
		})
	}
}
