package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
)

// TestCallOverTheWholeLimitIsNotRetryable checks that a call costing more
// than a spend limit holds in all is refused as not retryable and without a
// time to wait: no wait can let it through, and a model told to retry
// would retry forever. A call refused for a spend that refills is
// retryable, with the wait.
func TestCallOverTheWholeLimitIsNotRetryable(t *testing.T) {
	p := stepPolicy(t)
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cost := func(args map[string]any) (float64, error) { return float64(len(args["text"].(string))), nil }
	lm, err := mcpguard.Limit(lim, p, &mcpguard.Options{Tools: map[string]mcpguard.ToolOptions{"add_note": {Cost: cost}}})
	if err != nil {
		t.Fatal(err)
	}
	var s stub
	h := mcpguard.Authenticate(fixed(bob))(lm(s.handle))
	errObj := func(args string) map[string]any {
		t.Helper()
		res, err := h(context.Background(), req("add_note", args))
		if err != nil || !res.IsError {
			t.Fatalf("%s: %v %s, want a refusal", args, err, mustJSON(res))
		}
		var body struct{ Error map[string]any }
		if err := json.Unmarshal(res.StructuredContent.(json.RawMessage), &body); err != nil {
			t.Fatal(err)
		}
		return body.Error
	}
	over := errObj(`{"text":"eleven char"}`) // 11 > 10
	if over["code"] != "SPEND_LIMIT_EXCEEDED" || over["retryable"] != false || over["retry_after_seconds"] != nil {
		t.Errorf("a call costing more than the limit: %v, want SPEND_LIMIT_EXCEEDED, not retryable, no retry_after_seconds", over)
	}
	if got := codeOfCall(t, h, req("add_note", `{"text":"nine char"}`)); got != "" {
		t.Fatalf("a call of 9 of 10: %q", got)
	}
	later := errObj(`{"text":"two"}`) // 3 > the 1 left: refills
	if later["retryable"] != true || later["retry_after_seconds"] == nil {
		t.Errorf("a call the refill will let through: %v, want retryable with retry_after_seconds", later)
	}
}
