package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview62fChainOptionDryRunNotWrite: a call that opts' DryRun (or the
// tool's options) makes a dry run is one in a Guard: its DryRunAware
// handler's failure is answered retryable, without "the write may have
// been made" (call.failedWrite), and its own refusal keeps its wait. In
// the chain of DESIGN.md's order, Authorize (which takes no Options, so
// sees no dry run but one the _meta or the context asks for) tells the
// Recover outside that a write was handed on, and passes the handler's
// refusal through startedWrite: the dry run is answered as a write that
// may have been made, not retryable. Recover's doc promises the Guard's
// answer; a model told "check before repeating it" checks for a write
// that never was.
func TestReview62fChainOptionDryRunNotWrite(t *testing.T) {
	for _, opt := range []string{"options", "tool"} {
		for _, fail := range []string{"error", "refusal"} {
			t.Run(opt+"/"+fail, func(t *testing.T) {
				tools := map[string]mcpguard.ToolOptions{"add_note": {DryRunAware: true}}
				o := mcpguard.Options{Logger: quiet, NoWriteAhead: true, Tools: tools, Confirmer: testSigner(t, nil)}
				if opt == "options" {
					o.DryRun = true
				} else {
					tools["add_note"] = mcpguard.ToolOptions{DryRunAware: true, DryRun: true}
				}
				var s stub
				s.err = errors.New("review62f: the dry run failed")
				if fail == "refusal" {
					d := mcpguard.Deny(mcpguard.CodeUpstreamUnavailable, "the bank did not answer")
					d.RetryAfter = 5 * time.Second
					s.err = d
				}
				handle := func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					if !dryrun.FromContext(ctx) {
						t.Error("the handler ran for real")
					}
					return s.handle(ctx, r)
				}
				g, err := mcpguard.New(stepPolicy(t), fixed(bob), &o)
				if err != nil {
					t.Fatal(err)
				}
				wrapped, err := g.Wrap(&mcp.Tool{Name: "add_note", InputSchema: json.RawMessage(`{"type":"object"}`)}, handle)
				if err != nil {
					t.Fatal(err)
				}
				p, m := stepPolicy(t), must(t)
				chain := mcpguard.Chain(
					mcpguard.Recover(quiet),
					m(mcpguard.Audit(&memSink{}, &o)),
					mcpguard.Authenticate(fixed(bob)),
					mcpguard.Authorize(p),
					m(mcpguard.DryRun(p, &o)),
				)(handle)
				answer := func(h mcp.ToolHandler) *mcpguard.DenialError {
					res, err := h(context.Background(), req("add_note", `{}`))
					d, ok := mcpguard.DenialOf(res, err)
					if !ok {
						t.Fatalf("no refusal: %v %v", res, err)
					}
					return d
				}
				want, got := answer(wrapped), answer(chain)
				if strings.Contains(want.Message, "write may have been made") || want.RetryAfter < 0 {
					t.Fatalf("Guard: %s (retry %v), want a dry run's failure", want.Message, want.RetryAfter)
				}
				if got.Code != want.Code || got.Message != want.Message || got.RetryAfter != want.RetryAfter {
					t.Errorf("chain: %s %q retry after %v; Guard: %s %q retry after %v",
						got.Code, got.Message, got.RetryAfter, want.Code, want.Message, want.RetryAfter)
				}
			})
		}
	}
}
