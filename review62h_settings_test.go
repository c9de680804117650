package mcpguard_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview62hChainMatchesGuardSettings checks that the chain of the
// stand-alone steps, given the same Options, answers and records as a
// Guard does in the settings where the docs promise it: refusals of the
// steps that take Options in protocol-error mode, SchemaSafeErrors (with
// SchemaSafe outermost) for a tool with an output schema, confirmations
// on protocols 2025-11-25 and 2026-07-28, ValidateOutput, tool-error
// results without an error set, and the dry runs of DryRunAware tools that
// succeed or that the client asked for. The differences the docs allow
// (the steps without Options answer tool errors; DryRun knows no output
// schema; Recover's INTERNAL; no Timeout or RetryReads) are left out.
func TestReview62hChainMatchesGuardSettings(t *testing.T) {
	outSchema := []byte(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	hErr := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("boom")
	}
	hUp := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, mcpguard.Deny(mcpguard.CodeUpstreamUnavailable, "down")
	}
	hIsErr := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "nope"}}}, nil
	}
	hBadOut := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}, StructuredContent: map[string]any{"n": "x"}}, nil
	}
	hGoodOut := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}, StructuredContent: map[string]any{"n": 1}}, nil
	}
	hAware := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if dryrun.FromContext(ctx) {
			return nil, errors.New("preview failed")
		}
		return textResult("real"), nil
	}
	hAwareUp := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if dryrun.FromContext(ctx) {
			return nil, mcpguard.Deny(mcpguard.CodeUpstreamUnavailable, "preview down")
		}
		return textResult("real"), nil
	}
	hAwareOK := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if dryrun.FromContext(ctx) {
			return textResult("preview"), nil
		}
		return textResult("real"), nil
	}
	pe := func(o *mcpguard.Options) { o.ProtocolErrors = true }
	ss := func(o *mcpguard.Options) { o.SchemaSafeErrors = true }
	aware := func(dry bool) func(o *mcpguard.Options) {
		return func(o *mcpguard.Options) {
			o.DryRun = dry
			o.Tools = map[string]mcpguard.ToolOptions{"r56_write": {DryRunAware: true}, "r56_confirm": {DryRunAware: true}}
		}
	}
	for _, tc := range []struct {
		name string
		s    r62hSetup
		tool string
	}{
		{"pe/exhausted/read", r62hSetup{opts: pe, exhausted: true}, "r56_read"},
		{"pe/exhausted/write", r62hSetup{opts: pe, exhausted: true}, "r56_write"},
		{"pe/auditdown/write", r62hSetup{opts: pe, auditDown: true}, "r56_write"},
		{"pe/ok/write", r62hSetup{opts: pe}, "r56_write"},
		{"pe/confirm", r62hSetup{opts: pe}, "r56_confirm"},
		{"pe/confirm/old", r62hSetup{opts: pe, version: "2025-11-25"}, "r56_confirm"},
		{"pe/confirm/exhausted", r62hSetup{opts: pe, exhausted: true}, "r56_confirm"},
		{"pe/confirm/old/exhausted", r62hSetup{opts: pe, exhausted: true, version: "2025-11-25"}, "r56_confirm"},
		{"ss/confirm/old", r62hSetup{opts: ss, out: outSchema, handler: hGoodOut, version: "2025-11-25"}, "r56_confirm"},
		{"out/bad/confirm/old", r62hSetup{out: outSchema, handler: hBadOut, version: "2025-11-25"}, "r56_confirm"},
		{"pe/dry/write", r62hSetup{opts: func(o *mcpguard.Options) { o.ProtocolErrors = true; o.DryRun = true }}, "r56_write"},
		{"ss/exhausted/read", r62hSetup{opts: ss, out: outSchema, exhausted: true}, "r56_read"},
		{"ss/exhausted/write", r62hSetup{opts: ss, out: outSchema, exhausted: true}, "r56_write"},
		{"ss/forbidden", r62hSetup{opts: ss, out: outSchema}, "admin_r56"},
		{"ss/off", r62hSetup{opts: ss, out: outSchema}, "r56_off"},
		{"ss/err/write", r62hSetup{opts: ss, out: outSchema, handler: hErr}, "r56_write"},
		{"ss/badout/read", r62hSetup{opts: ss, out: outSchema, handler: hBadOut}, "r56_read"},
		{"ss/auditdown/write", r62hSetup{opts: ss, out: outSchema, auditDown: true}, "r56_write"},
		{"ss/confirm", r62hSetup{opts: ss, out: outSchema, handler: hGoodOut}, "r56_confirm"},
		{"out/bad/read", r62hSetup{out: outSchema, handler: hBadOut}, "r56_read"},
		{"out/bad/write", r62hSetup{out: outSchema, handler: hBadOut}, "r56_write"},
		{"out/none/write", r62hSetup{out: outSchema}, "r56_write"},
		{"out/good/write", r62hSetup{out: outSchema, handler: hGoodOut}, "r56_write"},
		{"out/iserr/read", r62hSetup{out: outSchema, handler: hIsErr}, "r56_read"},
		{"iserr/read", r62hSetup{handler: hIsErr}, "r56_read"},
		{"iserr/write", r62hSetup{handler: hIsErr}, "r56_write"},
		{"uperr/write", r62hSetup{handler: hUp}, "r56_write"},
		{"aware/dryopt/ok", r62hSetup{opts: aware(true), handler: hAwareOK}, "r56_write"},
		{"aware/dryopt/confirm", r62hSetup{opts: aware(true), handler: hAwareOK}, "r56_confirm"},
		{"aware/meta/err", r62hSetup{opts: aware(false), handler: hAware, meta: mcp.Meta{dryrun.MetaKey: true}}, "r56_write"},
		{"aware/meta/up", r62hSetup{opts: aware(false), handler: hAwareUp, meta: mcp.Meta{dryrun.MetaKey: true}}, "r56_write"},
		{"confirm/new", r62hSetup{}, "r56_confirm"},
		{"confirm/old", r62hSetup{version: "2025-11-25"}, "r56_confirm"},
		{"confirm/new/err", r62hSetup{handler: hErr}, "r56_confirm"},
		{"confirm/old/err", r62hSetup{version: "2025-11-25", handler: hErr}, "r56_confirm"},
		{"confirm/old/exhausted", r62hSetup{version: "2025-11-25", exhausted: true}, "r56_confirm"},
		{"confirm/new/exhausted", r62hSetup{exhausted: true}, "r56_confirm"},
		{"confirm/old/auditdown", r62hSetup{version: "2025-11-25", auditDown: true}, "r56_confirm"},
	} {
		t.Run(tc.name, func(t *testing.T) { r62hCompare(t, tc.s, tc.tool) })
	}
}
