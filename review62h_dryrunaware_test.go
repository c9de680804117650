package mcpguard_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview62hDryRunAwareFailure: a dry run made so by the server's
// settings (Options.DryRun, or the tool's ToolOptions.DryRun) of a
// DryRunAware write whose handler fails in its preview. The Guard answers
// it as the failure of a dry run, which wrote nothing: "the tool failed",
// and a refusal of the handler's own with a retryable code stays
// retryable. The chain of stand-alone steps, given the same Options,
// answers "the tool failed; the write may have been made: check before
// repeating it", and the handler's UPSTREAM_UNAVAILABLE not retryable:
// Authorize, which takes no Options, does not know the call is a dry run
// (it knows one the client asked for in _meta, and then matches the
// Guard), and marks it a started write for Recover. DryRun's doc says it
// answers dry runs "as the Guard's step 9 does", and Options.DryRun is
// among the settings the write-path steps take; a client told that a
// preview may have written, and not to retry it, is misled.
func TestReview62hDryRunAwareFailure(t *testing.T) {
	failing := func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if dryrun.FromContext(ctx) {
			return nil, errors.New("preview failed")
		}
		return textResult("real"), nil
	}
	upstream := func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if dryrun.FromContext(ctx) {
			return nil, mcpguard.Deny(mcpguard.CodeUpstreamUnavailable, "preview backend down")
		}
		return textResult("real"), nil
	}
	serverWide := func(o *mcpguard.Options) {
		o.DryRun = true
		o.Tools = map[string]mcpguard.ToolOptions{"r56_write": {DryRunAware: true}, "r56_confirm": {DryRunAware: true}}
	}
	perTool := func(o *mcpguard.Options) {
		o.Tools = map[string]mcpguard.ToolOptions{"r56_write": {DryRunAware: true, DryRun: true}}
	}
	for _, tc := range []struct {
		name, tool string
		opts       func(*mcpguard.Options)
		h          func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error)
	}{
		{"options-dryrun/error", "r56_write", serverWide, failing},
		{"options-dryrun/upstream", "r56_write", serverWide, upstream},
		{"options-dryrun/confirm-tool/error", "r56_confirm", serverWide, failing},
		{"tool-dryrun/error", "r56_write", perTool, failing},
		{"tool-dryrun/upstream", "r56_write", perTool, upstream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r62hCompare(t, r62hSetup{opts: tc.opts, handler: tc.h}, tc.tool)
		})
	}
}
