package mcpguard_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview31NestDeadlineConfirmedStore: the inner write "trigger_refund"
// needs a confirmation, which the older client's human gives at once; its
// signer keeps used nonces in Redis. The outer call's deadline passes while
// the inner write's intent is written. The inner write timed out before it
// ran, as one without a confirmation does: UPSTREAM_UNAVAILABLE, retryable,
// recorded so after its intent. Before, the state was used up after the
// deadline, with the call's context: the nonce store was not asked, and
// the call was refused CONFIRMATION_REQUIRED, "the server's confirmation
// store is unavailable", a fault of the server's that there was not.
func TestReview31NestDeadlineConfirmedStore(t *testing.T) {
	r := testsvc.StartRedis(t)
	for _, outerTool := range []string{"refund_and_notify", "lookup_and_refund"} {
		t.Run(outerTool, func(t *testing.T) {
			rules := []policy.ToolRule{
				{Name: "refund_and_notify", Class: policy.Write},
				{Name: "lookup_and_refund", Class: policy.Read},
				{Name: "trigger_refund", Class: policy.Write, Confirm: true, Cost: 5},
			}
			p := r30Policy(t, policy.Config{Tools: rules, WriteAllowlist: []string{"refund_and_notify", "trigger_refund"}})
			sink := &ndSlowIntents{memSink: &memSink{}}
			signer := redisSigner(t, r.Addr, "nd2:"+outerTool+":", "0123456789abcdef0123456789abcdef")
			g, err := mcpguard.New(p, fixed(bob), &mcpguard.Options{Audit: sink, Logger: quiet, Limiter: ndLimiter(t),
				Confirmer: signer, Tools: map[string]mcpguard.ToolOptions{outerTool: {Timeout: ndDeadline}}})
			if err != nil {
				t.Fatal(err)
			}
			obj := map[string]any{"type": "object"}
			var refunds atomic.Int64
			inner, err := g.Wrap(&mcp.Tool{Name: "trigger_refund", InputSchema: obj},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					refunds.Add(1)
					return textResult("refund R-1 made"), nil
				})
			if err != nil {
				t.Fatal(err)
			}
			var innerGot atomic.Value
			var slow atomic.Bool
			slow.Store(true)
			tool := &mcp.Tool{Name: outerTool, InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: outerTool == "lookup_and_refund"}}
			srv := mcp.NewServer(&mcp.Implementation{Name: "nest", Version: "1"}, nil)
			if err := g.AddTool(srv, tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if slow.Load() {
					sink.delay.Store(int64(2 * ndDeadline)) // the outer call's own intent is made
				}
				res, err := nestInnerCall(ctx, inner, req, "trigger_refund", `{}`)
				innerGot.Store(ndRead(res, err))
				return res, err
			}); err != nil {
				t.Fatal(err)
			}
			cs := connectVersion(t, srv, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
				},
			}, "2025-11-25")
			if _, err := call(t, cs, outerTool, map[string]any{}); err != nil {
				t.Fatal(err)
			}
			if err := g.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := refunds.Load(); n != 0 {
				t.Errorf("the inner write ran %d times after its caller's deadline", n)
			}
			ig, _ := innerGot.Load().(ndAnswer)
			if ig.Code != "UPSTREAM_UNAVAILABLE" || !strings.HasPrefix(ig.Message, ndTimedOut) || !ig.Retryable {
				t.Errorf("the inner call's answer: %+v; want UPSTREAM_UNAVAILABLE %q..., retryable", ig, ndTimedOut)
			}
			var recs []string
			for _, e := range sink.all() {
				if e.Tool == "trigger_refund" {
					recs = append(recs, fmt.Sprint(e.Phase, "/", e.Allowed, "/", e.Code, "/", e.Detail))
				}
			}
			want := "[intent/true// outcome/false/UPSTREAM_UNAVAILABLE/the call's deadline passed before the tool ran; the tool was not run]"
			if fmt.Sprint(recs) != want {
				t.Errorf("the inner write's records: %q\nwant %q", recs, want)
			}
			// Nothing spent, no place kept: a next call runs.
			slow.Store(false)
			sink.delay.Store(0)
			res, err := call(t, cs, outerTool, map[string]any{})
			if got := ndRead(res, err); got.Code != "ok" || refunds.Load() != 1 {
				t.Errorf("a next call: %+v, the inner write ran %d times; want it run once", got, refunds.Load())
			}
		})
	}
}
