package gateway

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview7TrailCostsAddUpToSpend checks audit.Event.Cost's promise,
// which the gateway's records share: "the costs of a trail add up to the
// spend". One forwarded write of cost 5 under a spend cap of 5 is charged
// 5, so the trail should add up to 5. Instead the write's durable intent
// (post.go, g.event(..., PhaseIntent, ..., c.cost, ...)) and its outcome
// (callState.finish) both carry cost 5, and the trail adds up to 10.
func TestReview7TrailCostsAddUpToSpend(t *testing.T) {
	cfg := DefaultPolicyConfig()
	cfg.Tools = []policy.ToolRule{{Name: "trigger_refund", Class: policy.Write, Cost: 5}}
	cfg.WriteAllowlist = []string{"trigger_refund"}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 5, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []audit.Event
	sink := audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, *e)
		return nil
	})
	rg := newRig(t, &Options{Policy: pol, Audit: sink, Limiter: lim})
	if got := rg.post(t, viewer, call(`1`, "trigger_refund", `{"amount":5}`)); got.status != http.StatusOK {
		t.Fatalf("first write: %d %s", got.status, got.body)
	}
	// The spend cap is used up: the first write was charged 5, no more.
	if got := rg.post(t, viewer, call(`2`, "trigger_refund", `{"amount":5}`)); got.status != http.StatusTooManyRequests {
		t.Fatalf("second write: %d %s, want 429", got.status, got.body)
	}
	mu.Lock()
	defer mu.Unlock()
	var sum float64
	var recs []string
	for _, e := range events {
		sum += e.Cost
		recs = append(recs, string(e.Phase)+"/"+e.Code)
	}
	if sum != 5 {
		t.Errorf("the trail's costs add up to %v (records %v), want 5, the spend charged", sum, recs)
	}
}
