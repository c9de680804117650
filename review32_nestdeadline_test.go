package mcpguard_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/confirm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview32NestDeadlineSlowNonceStore: the inner write "trigger_refund"
// needs a confirmation, which the older client's human gives at once; the
// write-ahead intent is quick, but the nonce store answers after the outer
// call's deadline has passed. Whether the store says the nonce is fresh
// (it did not look at the context) or fails with the context's error, the
// inner write timed out before it ran: refused UPSTREAM_UNAVAILABLE,
// retryable, recorded so, and its handler is never called, as when the
// deadline passed in the write-ahead record. Before, a fresh answer from
// a slow store let the handler run past the deadline, the caller waiting.
func TestReview32NestDeadlineSlowNonceStore(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store confirm.NonceStoreFunc
	}{
		{"fresh after the deadline", func(context.Context, string, time.Time, time.Time) (bool, error) {
			time.Sleep(2 * ndDeadline)
			return true, nil
		}},
		{"fails at the deadline", func(ctx context.Context, _ string, _, _ time.Time) (bool, error) {
			<-ctx.Done()
			return false, ctx.Err()
		}},
	} {
		for _, outerTool := range []string{"refund_and_notify", "lookup_and_refund"} {
			t.Run(tc.name+"/"+outerTool, func(t *testing.T) {
				s, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}},
					&confirm.Options{Nonces: tc.store})
				if err != nil {
					t.Fatal(err)
				}
				rig := ndBeforeRunRig(t, outerTool, s)
				rig.slow.Store(false) // the intents are quick: the store is slow
				cs := connectVersion(t, rig.srv, &mcp.ClientOptions{
					ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
					},
				}, "2025-11-25")
				if _, err := call(t, cs, outerTool, map[string]any{}); err != nil {
					t.Fatal(err)
				}
				rig.checkNotRun(t)
			})
		}
	}
}
