package mcpguard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func r26mPolicy(t *testing.T, def *policy.ToolRule) *policy.Policy {
	t.Helper()
	p, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "get_order", Class: policy.Read},
			{Name: "refund_order", Class: policy.Write, Cost: 5},
			{Name: "add_note", Class: policy.Write},
		},
		Default:        def,
		WriteAllowlist: []string{"refund_order", "add_note"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func r26mAuthn() mcpguard.Authenticator {
	return mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
		return nil, mcpguard.ErrUnauthenticated
	})
}

func r26mLimiter(t *testing.T, limits ...limiter.Limit) *limiter.Limiter {
	t.Helper()
	l, err := limiter.New(limits, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestReview26DryRunOnReadTool: ToolOptions.DryRun for a tool the policy
// classes Read is ignored (reads are never dry runs), so a tool that writes
// but was classed Read writes for real while its author believes it dry
// runs. New refuses it, naming the tool; DryRun on a write is accepted.
func TestReview26DryRunOnReadTool(t *testing.T) {
	p := r26mPolicy(t, nil)
	_, err := mcpguard.New(p, r26mAuthn(), &mcpguard.Options{NoWriteAhead: true,
		Tools: map[string]mcpguard.ToolOptions{"get_order": {DryRun: true}}})
	if err == nil || !strings.Contains(err.Error(), `"get_order"`) {
		t.Fatalf("New(DryRun for read tool get_order) = %v, want an error naming get_order", err)
	}
	// The stand-alone steps check their options the same way.
	if _, err := mcpguard.DryRun(p, &mcpguard.Options{Tools: map[string]mcpguard.ToolOptions{"get_order": {DryRun: true}}}); err == nil {
		t.Fatal("DryRun step with DryRun for read tool get_order: nil error")
	}
	if _, err := mcpguard.New(p, r26mAuthn(), &mcpguard.Options{NoWriteAhead: true,
		Tools: map[string]mcpguard.ToolOptions{"add_note": {DryRun: true}, "get_order": {Timeout: time.Second}}}); err != nil {
		t.Fatalf("New(DryRun for write tool add_note) = %v", err)
	}
	// A name the default rule governs as a write may dry-run.
	if _, err := mcpguard.New(r26mPolicy(t, &policy.ToolRule{Class: policy.Write}), r26mAuthn(), &mcpguard.Options{NoWriteAhead: true,
		Tools: map[string]mcpguard.ToolOptions{"other_tool": {DryRun: true}}}); err != nil {
		t.Fatalf("New(DryRun for a name of the write default rule) = %v", err)
	}
}

// TestReview26LimitForUnknownTool: a limiter Limit whose Tool the policy
// has no rule for (a typo, "refund_ordr") caps nothing: no call of that
// name is ever admitted. New refuses it, naming the tool. A limit for
// another spelling of a tool's name applies to that tool (limiter.Limit's
// Tool) and is accepted, and so is every limit when a default rule makes
// every name a tool.
func TestReview26LimitForUnknownTool(t *testing.T) {
	typo := limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Tool: "refund_ordr", Max: 100, Window: time.Hour}
	_, err := mcpguard.New(r26mPolicy(t, nil), r26mAuthn(), &mcpguard.Options{NoWriteAhead: true, Limiter: r26mLimiter(t, typo)})
	if err == nil || !strings.Contains(err.Error(), `"refund_ordr"`) {
		t.Fatalf("New(limit for refund_ordr) = %v, want an error naming refund_ordr", err)
	}
	// The stand-alone steps given the limiter in their options too.
	if _, err := mcpguard.Confirm(testSigner(t, nil), r26mPolicy(t, nil), &mcpguard.Options{Limiter: r26mLimiter(t, typo)}); err == nil {
		t.Fatal("Confirm step with a limit for refund_ordr: nil error")
	}
	ok := []limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Global, Max: 10, Window: time.Minute},
		{Kind: limiter.Spend, Scope: limiter.User, Tool: "refund_order", Max: 100, Window: time.Hour},
		{Kind: limiter.Rate, Scope: limiter.User, Tool: "Refund_Order", Max: 10, Window: time.Minute},
		{Kind: limiter.Concurrency, Scope: limiter.Global, Tool: "get_order", Max: 2},
	}
	if _, err := mcpguard.New(r26mPolicy(t, nil), r26mAuthn(), &mcpguard.Options{NoWriteAhead: true, Limiter: r26mLimiter(t, ok...)}); err != nil {
		t.Fatalf("New(limits for known tools) = %v", err)
	}
	if _, err := mcpguard.New(r26mPolicy(t, &policy.ToolRule{Class: policy.Read, Cost: 1}), r26mAuthn(), &mcpguard.Options{Limiter: r26mLimiter(t, typo)}); err != nil {
		t.Fatalf("New(limit for a name the default rule governs) = %v", err)
	}
}

// TestReview26SpendLimitForFreeTool: a spend limit for one tool that no
// call of can cost anything (its rule's Cost is 0, no ToolOptions.Cost,
// no default rule with a cost) caps nothing. New refuses it, naming the
// tool; a spend limit for a tool with a Cost function, or a fixed cost, is
// accepted, and so is a spend limit for every tool (a configuration may
// cap spending before any tool costs anything).
func TestReview26SpendLimitForFreeTool(t *testing.T) {
	free := limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Tool: "add_note", Max: 100, Window: time.Hour}
	_, err := mcpguard.New(r26mPolicy(t, nil), r26mAuthn(), &mcpguard.Options{NoWriteAhead: true, Limiter: r26mLimiter(t, free)})
	if err == nil || !strings.Contains(err.Error(), `"add_note"`) {
		t.Fatalf("New(spend limit for free tool add_note) = %v, want an error naming add_note", err)
	}
	cost := func(map[string]any) (float64, error) { return 1, nil }
	for _, tc := range []struct {
		name  string
		def   *policy.ToolRule
		tools map[string]mcpguard.ToolOptions
		lim   limiter.Limit
	}{
		{"cost_function", nil, map[string]mcpguard.ToolOptions{"add_note": {Cost: cost}}, free},
		{"cost_function_other_spelling", nil, map[string]mcpguard.ToolOptions{"add_note": {Cost: cost}},
			limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Tool: "ADD_NOTE", Max: 100, Window: time.Hour}},
		{"fixed_cost", nil, nil, limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Tool: "refund_order", Max: 100, Window: time.Hour}},
		{"default_cost", &policy.ToolRule{Class: policy.Write, Cost: 1}, nil, free},
		{"every_tool", nil, nil, limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 100, Window: time.Hour}},
		{"rate_for_free_tool", nil, nil, limiter.Limit{Kind: limiter.Rate, Scope: limiter.User, Tool: "add_note", Max: 100, Window: time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := mcpguard.New(r26mPolicy(t, tc.def), r26mAuthn(), &mcpguard.Options{NoWriteAhead: true, Tools: tc.tools,
				Limiter: r26mLimiter(t, tc.lim)}); err != nil {
				t.Fatalf("New(%v) = %v", tc.lim, err)
			}
		})
	}
}
