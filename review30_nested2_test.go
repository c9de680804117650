package mcpguard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview30Nested2DeadlineEndsQuestion: "refund_and_notify" (a write)
// and "lookup_and_refund" (a read) have a 10 ms Timeout and call the
// guarded write "trigger_refund" in-process with their context; its
// handler asks the client (an older one, asked within the call), who does
// not answer in time. The inner write keeps the outer call's deadline, and
// its question ends by it: the inner write timed out (UPSTREAM_UNAVAILABLE,
// "the tool timed out"), every time it ran (under load the deadline may
// pass before it runs: UPSTREAM_UNAVAILABLE too, not run). Before, the question was ended too by
// the guard's watch on its caller's context, which ends by the same
// deadline, with context.Canceled: whichever came first, about one call in
// three was refused INTERNAL "the tool failed", logged as a handler's
// failure. So too ("unguarded") for a write called by an unguarded tool's
// handler with a deadline of its own: the write runs on (its handler has no
// deadline), but its question ends at its caller's deadline, which is no
// failure of the tool's.
func TestReview30Nested2DeadlineEndsQuestion(t *testing.T) {
	for _, outerTool := range []string{"refund_and_notify", "lookup_and_refund", "unguarded"} {
		t.Run(outerTool, func(t *testing.T) {
			sink := &memSink{}
			opts := &mcpguard.Options{Audit: sink, Logger: quiet}
			if outerTool != "unguarded" {
				opts.Tools = map[string]mcpguard.ToolOptions{outerTool: {Timeout: 10 * time.Millisecond}}
			}
			g, err := mcpguard.New(nestPolicy(t), fixed(bob), opts)
			if err != nil {
				t.Fatal(err)
			}
			obj := map[string]any{"type": "object"}
			inner, err := g.Wrap(&mcp.Tool{Name: "trigger_refund", InputSchema: obj},
				func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					if _, err := req.Session.Elicit(ctx, r30Form("notify the customer?")); err != nil {
						return nil, err
					}
					return textResult("refund R-1 made"), nil
				})
			if err != nil {
				t.Fatal(err)
			}
			srv := mcp.NewServer(&mcp.Implementation{Name: "nest", Version: "1"}, nil)
			tool := &mcp.Tool{Name: outerTool, InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: outerTool == "lookup_and_refund"}}
			if outerTool == "unguarded" {
				// The server's own tool, not guarded; a guarded tool of the
				// server's gives it the guard's sending middleware.
				srv.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					ctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
					defer cancel()
					return nestInnerCall(ctx, inner, req, "trigger_refund", `{}`)
				})
				if err := g.AddTool(srv, &mcp.Tool{Name: "lookup_and_refund", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
					func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil }); err != nil {
					t.Fatal(err)
				}
			} else if err := g.AddTool(srv, tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nestInnerCall(ctx, inner, req, "trigger_refund", `{}`)
			}); err != nil {
				t.Fatal(err)
			}
			cs := connectVersion(t, srv, &mcp.ClientOptions{
				ElicitationHandler: func(ectx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					select {
					case <-ectx.Done():
						return nil, ectx.Err()
					case <-time.After(5 * time.Second):
						return &mcp.ElicitResult{Action: "decline"}, nil
					}
				},
			}, "2025-11-25")
			const n = 30
			var answers []string
			for range n {
				res, err := call(t, cs, outerTool, map[string]any{})
				answers = append(answers, codeOf(t, res, err))
			}
			if err := g.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, e := range sink.all() {
				if e.Tool == "trigger_refund" && e.Phase == audit.PhaseOutcome {
					got[fmt.Sprint(e.Code, "/", e.Detail)]++
				}
			}
			// On a loaded machine the deadline can pass before a handler
			// starts: the tool is then not run (the inner write, or the outer
			// tool and with it the inner write), which is no failure either.
			// Most calls must reach the question.
			const asked, notRun = "UPSTREAM_UNAVAILABLE/handler error: timed out",
				"UPSTREAM_UNAVAILABLE/the call's deadline passed before the tool ran; the tool was not run"
			others := len(got)
			for _, k := range []string{asked, notRun} {
				if got[k] > 0 {
					others--
				}
			}
			if others > 0 || got[asked] < n/2 {
				t.Errorf("the inner write's outcomes, its question ended by its caller's deadline: %v, want only %q or %q, and at least %d of the first",
					got, asked, notRun, n/2)
			}
			if s := strings.Join(answers, " "); strings.Count(s, "UPSTREAM_UNAVAILABLE") != n {
				t.Errorf("the outer call's answers: %s, want UPSTREAM_UNAVAILABLE (the inner write timed out)", s)
			}
		})
	}
}
