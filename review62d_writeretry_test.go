package mcpguard_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview62dChainWriteRefusalRetryable: doc.go's error contract says
// "retryable is never true for a write whose handler started and failed:
// it may have written", and that a handler's own refusal of a write is not
// retryable unless its code says the call was not carried out (a cap or
// AUDIT_UNAVAILABLE). The Guard holds to it: a write handler that returns
// UPSTREAM_UNAVAILABLE (its downstream timed out mid-write) is answered
// not retryable. The chain of stand-alone steps in DESIGN.md's order
// (Recover outermost, then Audit, ..., WriteAhead) answers the same call
// retryable, with a retry_after_seconds: a model retries a write that may
// have been made. Both are documented to give the same answer.
func TestReview62dChainWriteRefusalRetryable(t *testing.T) {
	for _, mode := range []string{"wrap", "chain"} {
		t.Run(mode, func(t *testing.T) {
			e := newR56EnvMode(t, mode, r56Opts{noTimeout: true})
			e.authOK.Store(true)
			e.mode.Store("hook")
			e.hook = func(context.Context) (*mcp.CallToolResult, error) {
				return nil, mcpguard.Deny(mcpguard.CodeUpstreamUnavailable, "the bank did not answer in time")
			}
			res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "r56_write", Arguments: map[string]any{"text": "x"}})
			d, ok := mcpguard.DenialOf(res, err)
			if !ok {
				t.Fatalf("no refusal: %v %v", res, err)
			}
			if e.ran.Load() != 1 {
				t.Fatalf("handler ran %d times", e.ran.Load())
			}
			if d.Retryable() {
				t.Errorf("%s: write whose handler ran answered retryable: %s (RetryAfter %v)", mode, d, d.RetryAfter)
			}
			if err := e.g.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			evs := e.sink.all()
			if len(evs) == 0 {
				t.Fatal("no records")
			}
			last := evs[len(evs)-1]
			if got := fmt.Sprintf("%s %v %s", last.Phase, last.Allowed, last.Code); got != "outcome false UPSTREAM_UNAVAILABLE" {
				t.Errorf("%s: record %s", mode, got)
			}
		})
	}
}
