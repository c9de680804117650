package mcpguard_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview21RefusedDryRunAuditedAsDryRun: a call of a write tool that is
// a dry run (the server's DryRun, the tool's, or the client's _meta key),
// that the policy allows and that is refused before step 9 (an argument
// limit, INVALID_ARGUMENTS) is still a dry run, and its record says dry_run
// true. Before, the guard decided the dry run only after validation, so
// such records said dry_run false: on a server whose every write is a dry
// run, the trail showed refused real writes. A call the policy refuses
// (WRITE_NOT_ALLOWED) is no dry run of anything allowed, as the
// stand-alone Authorize records it; a read is never a dry run, and a write
// without any of the three is none.
func TestReview21RefusedDryRunAuditedAsDryRun(t *testing.T) {
	cfg := basePolicy(false)
	for i := range cfg.Tools {
		if cfg.Tools[i].Name == "add_note" {
			cfg.Tools[i].ArgLimits = []policy.ArgLimit{{Field: "amount", Max: 10}}
		}
	}
	type step struct {
		tool string
		args map[string]any
		code string
	}
	steps := []step{
		{"delete_all", map[string]any{}, "WRITE_NOT_ALLOWED"},
		{"add_note", map[string]any{"title": "x", "amount": 50}, "FORBIDDEN"},
		{"add_note", map[string]any{"title": "x", "amount": 5, "dry_run": false}, "INVALID_ARGUMENTS"},
		{"add_note", map[string]any{"title": "x", "amount": 5}, ""},
		{"echo", map[string]any{"text": 1}, "INVALID_ARGUMENTS"},
	}
	for _, tc := range []struct {
		name string
		opts *mcpguard.Options
		meta mcp.Meta
		dry  bool // the writes' records
	}{
		{"server_dry_run", &mcpguard.Options{DryRun: true}, nil, true},
		{"tool_dry_run", &mcpguard.Options{Tools: map[string]mcpguard.ToolOptions{"add_note": {DryRun: true}, "delete_all": {DryRun: true}}}, nil, true},
		{"client_meta", nil, mcp.Meta{dryrun.MetaKey: true}, true},
		{"client_meta_other_case", nil, mcp.Meta{"Io.McpGuard/DRYRUN": "1"}, true},
		{"no_dry_run", nil, mcp.Meta{dryrun.MetaKey: false}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, cfg, tc.opts)
			cs := h.connect(bob, clientOpts{})
			for _, s := range steps {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: s.tool, Arguments: s.args, Meta: tc.meta})
				if err != nil {
					t.Fatalf("CallTool(%s): %v", s.tool, err)
				}
				if got := errorCode(t, res); got != s.code {
					t.Fatalf("CallTool(%s %v) code %q, want %q", s.tool, s.args, got, s.code)
				}
			}
			var got, want []string
			for _, e := range h.sink.all() {
				if e.Phase == audit.PhaseOutcome {
					got = append(got, fmt.Sprintf("%s %s dry_run=%v", e.Tool, e.Code, e.DryRun))
				}
			}
			for _, s := range steps {
				want = append(want, fmt.Sprintf("%s %s dry_run=%v", s.tool, s.code, tc.dry && s.tool == "add_note"))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReview21StepRefusedDryRunAuditedAsDryRun: the stand-alone DryRun
// step, used without Authorize outside it, refuses what the policy refuses,
// argument limits included; a dry run of an allowed write that it refuses
// for its arguments is recorded by the Audit middleware with dry_run true,
// as the Guard records it (before: false), and a write the policy refuses
// with dry_run false, as the Guard records it.
func TestReview21StepRefusedDryRunAuditedAsDryRun(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "pay", Class: policy.Write, ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 10}}},
			{Name: "wipe", Class: policy.Write},
		},
		WriteAllowlist: []string{"pay"},
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	o := &mcpguard.Options{Logger: quiet, DryRun: true}
	dry, err := mcpguard.DryRun(pol, o)
	if err != nil {
		t.Fatal(err)
	}
	h := mcpguard.Chain(mustAudit(t, sink, o), mcpguard.Authenticate(fixed(bob)), dry)(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		t.Error("the handler ran")
		return textResult("paid"), nil
	})
	for _, c := range []struct{ tool, args, code string }{
		{"pay", `{"amount":50}`, "FORBIDDEN"},
		{"wipe", `{}`, "WRITE_NOT_ALLOWED"},
		{"pay", `{"amount":5}`, ""},
	} {
		res, err := h(context.Background(), req(c.tool, c.args))
		if got := codeOf(t, res, err); got != c.code {
			t.Fatalf("%s %s: code %q, want %q", c.tool, c.args, got, c.code)
		}
	}
	var got []string
	for _, e := range sink.all() {
		got = append(got, fmt.Sprintf("%s %s dry_run=%v", e.Tool, e.Code, e.DryRun))
	}
	want := []string{"pay FORBIDDEN dry_run=true", "wipe WRITE_NOT_ALLOWED dry_run=false", "pay  dry_run=true"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}
