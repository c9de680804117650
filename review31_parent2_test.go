package mcpguard_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview31Parent2SameRequest: a client's call that passes through two
// audited layers of one request (a guard installed on the server and, on
// its tool, a handler of another guard's Wrap or an Audit chain; an Audit
// chain around a Wrap'd handler) is a call the client sent: no record of
// it names a parent. Before, the inner layer's records named the outer
// layer's correlation id as their parent, as if the tool's handler had
// made a call of its own. A call the inner handler does make, with a
// request of its own, still names its direct outer call: the inner layer's.
func TestReview31Parent2SameRequest(t *testing.T) {
	p := nestPolicy(t)
	obj := map[string]any{"type": "object"}
	leaf := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("done"), nil
	}
	for _, mode := range []string{"install_wrap", "install_audit", "audit_wrap"} {
		t.Run(mode, func(t *testing.T) {
			sink := &memSink{}
			g := r2Guard(t, p, sink)  // the outer layer (install_*)
			g2 := r2Guard(t, p, sink) // the inner tool's guard
			trigger, err := g2.Wrap(&mcp.Tool{Name: "trigger_refund", InputSchema: obj}, leaf)
			if err != nil {
				t.Fatal(err)
			}
			// The composite tool's own handler: it makes one call of its
			// own, with a request of its own.
			composite := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nestInnerCall(ctx, trigger, req, "trigger_refund", `{}`)
			}
			tool := &mcp.Tool{Name: "refund_and_notify", InputSchema: obj}
			am, err := mcpguard.Audit(sink, &mcpguard.Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			var h mcp.ToolHandler
			switch mode {
			case "install_wrap":
				h, err = g2.Wrap(tool, composite)
			case "install_audit":
				h = mcpguard.Chain(mcpguard.Authenticate(fixed(bob)), am)(composite)
			case "audit_wrap":
				var w mcp.ToolHandler
				w, err = g2.Wrap(tool, composite)
				h = mcpguard.Chain(mcpguard.Authenticate(fixed(bob)), am)(w)
			}
			if err != nil {
				t.Fatal(err)
			}
			if mode == "audit_wrap" {
				if _, err := r31Call(context.Background(), h, "refund_and_notify"); err != nil {
					t.Fatal(err)
				}
			} else {
				srv := mcp.NewServer(&mcp.Implementation{Name: "same", Version: "1"}, nil)
				srv.AddTool(tool, h)
				if err := g.Install(srv); err != nil {
					t.Fatal(err)
				}
				cs := connectVersion(t, srv, nil, "")
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "refund_and_notify", Arguments: map[string]any{}}); err != nil || res.IsError {
					t.Fatalf("call: %+v, %v", res, err)
				}
			}
			recs := r31Records(sink.all())
			outer, inner := recs["refund_and_notify"], recs["trigger_refund"]
			corrs := map[string]bool{}
			for _, e := range outer {
				corrs[e.CorrelationID] = true
				if e.ParentID != "" {
					t.Errorf("the client's call: %s record %s (allowed %v): parent %q, want none (a call the client sent)",
						e.Phase, e.CorrelationID, e.Allowed, e.ParentID)
				}
			}
			if len(corrs) != 2 {
				t.Fatalf("the client's call: %d correlation ids in %+v, want 2 (one per layer)", len(corrs), outer)
			}
			// The inner layer's id: the one the composite's handler ran
			// within, which its own call names.
			if len(inner) != 2 || inner[0].ParentID == "" || !corrs[inner[0].ParentID] || inner[1].ParentID != inner[0].ParentID {
				t.Fatalf("the composite's call: %+v, want an intent and an outcome naming a layer of the client's call", inner)
			}
			innermost := outer[len(outer)-1].CorrelationID // a layer's record is written as it returns
			for _, e := range outer {
				if e.Phase == audit.PhaseOutcome {
					innermost = e.CorrelationID
					break
				}
			}
			if inner[0].ParentID != innermost {
				t.Errorf("the composite's call names %s, want the inner layer's %s (the direct outer call)", inner[0].ParentID, innermost)
			}
		})
	}
}
