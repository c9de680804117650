package gateway

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview57WriteIntentBounded: a write's intent record was written with
// the request's context only, so a sink that stops answering without
// failing (a PostgreSQL server whose host froze) held the call for as long
// as its client waited, and forwarded it however late once the sink
// answered. Timeout bounds it now: 503 AUDIT_UNAVAILABLE, never forwarded.
func TestReview57WriteIntentBounded(t *testing.T) {
	cfg := DefaultPolicyConfig()
	cfg.Tools = []policy.ToolRule{{Name: "trigger_refund", Class: policy.Write}}
	cfg.WriteAllowlist = []string{"trigger_refund"}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	answer := make(chan struct{})
	defer close(answer)
	sink := audit.SinkFunc(func(ctx context.Context, e *audit.Event) error {
		if e.Phase != audit.PhaseIntent {
			return nil
		}
		select {
		case <-answer:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	const bound = 300 * time.Millisecond
	rg := newRig(t, &Options{Policy: pol, Audit: sink, Timeout: bound})
	start := time.Now()
	got := rg.post(t, viewer, call(`1`, "trigger_refund", `{"amount":5}`))
	took := time.Since(start)
	if got.status != http.StatusServiceUnavailable {
		t.Fatalf("status %d after %v, want 503: %s", got.status, took, got.body)
	}
	if _, code, data := rpcErr(t, got.body); code != CodeInternal || data["code"] != "AUDIT_UNAVAILABLE" {
		t.Errorf("answer %s", got.body)
	}
	if took < bound || took > bound+10*time.Second {
		t.Errorf("answered after %v; want about %v", took, bound)
	}
	if n := len(rg.down.log()); n != 0 {
		t.Errorf("the write reached the downstream %d times without a durable intent", n)
	}
}
