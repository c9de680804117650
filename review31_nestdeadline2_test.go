package mcpguard_test

import (
	"context"
	"testing"

	"github.com/mcpguard/mcpguard/internal/testsvc"
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
			rig := ndBeforeRunRig(t, outerTool, redisSigner(t, r.Addr, "nd2:"+outerTool+":", "0123456789abcdef0123456789abcdef"))
			srv, sink, refunds, slow := rig.srv, rig.sink, &rig.refunds, &rig.slow
			cs := connectVersion(t, srv, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
				},
			}, "2025-11-25")
			if _, err := call(t, cs, outerTool, map[string]any{}); err != nil {
				t.Fatal(err)
			}
			rig.checkNotRun(t)
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
