package mcpguard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview26bLimitStepChecksItsLimiter: the stand-alone Limit step
// applies the limiter it is given, not opts.Limiter, yet New's check of
// limits for one tool ran on opts.Limiter only: a typo'd limit
// ("refund_ordr") or a spend limit for a tool that costs nothing, given
// to Limit, was accepted and capped nothing, while a bad opts.Limiter,
// which Limit never uses, refused a good one.
func TestReview26bLimitStepChecksItsLimiter(t *testing.T) {
	p := r26mPolicy(t, nil)
	typo := r26mLimiter(t, limiter.Limit{Kind: limiter.Rate, Scope: limiter.User, Tool: "refund_ordr", Max: 10, Window: time.Minute})
	free := r26mLimiter(t, limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Tool: "add_note", Max: 10, Window: time.Minute})
	good := r26mLimiter(t, limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Tool: "refund_order", Max: 10, Window: time.Minute})
	if _, err := mcpguard.Limit(typo, p, nil); err == nil || !strings.Contains(err.Error(), `"refund_ordr"`) {
		t.Errorf("Limit(limit for refund_ordr, no such rule) = %v, want an error naming refund_ordr", err)
	}
	if _, err := mcpguard.Limit(free, p, nil); err == nil || !strings.Contains(err.Error(), `"add_note"`) {
		t.Errorf("Limit(spend limit for add_note, which costs nothing) = %v, want an error naming add_note", err)
	}
	if _, err := mcpguard.Limit(good, p, &mcpguard.Options{Limiter: typo}); err != nil {
		t.Errorf("Limit(good limiter, opts.Limiter that Limit does not use) = %v, want nil", err)
	}
	// A Cost function makes the spend limit cap something.
	if _, err := mcpguard.Limit(free, p, &mcpguard.Options{Tools: map[string]mcpguard.ToolOptions{
		"add_note": {Cost: func(map[string]any) (float64, error) { return 1, nil }},
	}}); err != nil {
		t.Errorf("Limit(spend limit for add_note with a Cost function) = %v, want nil", err)
	}
}

// TestReview26bDryRunForFoldedName: ToolOptions.DryRun keyed by another
// spelling of a write tool's name ("Refund_Order" for refund_order), which
// the default rule gives a rule, applies to calls by that spelling only
// (see Options.Tools): calls of the tool itself write for real while its
// author believes it dry runs, as with DryRun on a Read tool. New refuses
// it unless the tool's own options set DryRun too, naming both.
func TestReview26bDryRunForFoldedName(t *testing.T) {
	p := r26mPolicy(t, &policy.ToolRule{Class: policy.Read})
	_, err := mcpguard.New(p, r26mAuthn(), &mcpguard.Options{NoWriteAhead: true,
		Tools: map[string]mcpguard.ToolOptions{"Refund_Order": {DryRun: true}}})
	if err == nil || !strings.Contains(err.Error(), `"Refund_Order"`) || !strings.Contains(err.Error(), `"refund_order"`) {
		t.Fatalf("New(DryRun for Refund_Order only) = %v, want an error naming Refund_Order and refund_order", err)
	}
	if _, err := mcpguard.DryRun(p, &mcpguard.Options{Tools: map[string]mcpguard.ToolOptions{"Refund_Order": {DryRun: true}}}); err == nil {
		t.Fatal("DryRun step with DryRun for Refund_Order only: nil error")
	}
	// Accepted: the tool's own DryRun is set (the spelling's is redundant),
	// or the spelling's options set anything but DryRun.
	for _, tools := range []map[string]mcpguard.ToolOptions{
		{"Refund_Order": {DryRun: true}, "refund_order": {DryRun: true}},
		{"Refund_Order": {Timeout: time.Second}},
		{"refund_order": {DryRun: true}},
	} {
		if _, err := mcpguard.New(p, r26mAuthn(), &mcpguard.Options{NoWriteAhead: true, Tools: tools}); err != nil {
			t.Errorf("New(Tools %v) = %v, want nil", tools, err)
		}
	}
}
