package mcpguard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review62iPanicLimit returns a Limit step whose Cost function panics (the
// operator's bug), before the tool runs.
func review62iPanicLimit(t *testing.T) mcpguard.Middleware {
	t.Helper()
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := &mcpguard.Options{Logger: quiet, Tools: map[string]mcpguard.ToolOptions{
		"add_note": {Cost: func(map[string]any) (float64, error) { panic("review62i: Cost's bug") }},
	}}
	return must(t)(mcpguard.Limit(lim, stepPolicy(t), opts))
}

// TestReview62iAuditOutsideRecoverPanicBeforeTool: Recover's doc has an
// [Audit] outside it ("an Audit outside records it so"). In such a chain a
// write-path step hands the write on (the Recover hears of a write) and a
// step inside it panics before the tool ran (a Cost function's bug). Since
// a059cf7 the step marks the Recover's call "before the tool ran" only if
// the Audit it sees is the one the Recover found inside it (rc.ac), which
// an Audit outside never is: the write whose tool never ran is answered
// "the write may have been made", not retryable, as in DESIGN's order it
// is not.
func TestReview62iAuditOutsideRecoverPanicBeforeTool(t *testing.T) {
	p, m := stepPolicy(t), must(t)
	opts := &mcpguard.Options{Logger: quiet}
	ran := 0
	tool := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ran++
		return textResult("ok"), nil
	}
	answer := func(outerAudit bool) *mcpguard.DenialError {
		steps := []mcpguard.Middleware{
			mcpguard.Recover(quiet),
			m(mcpguard.Audit(&memSink{}, opts)),
			mcpguard.Authenticate(fixed(bob)),
			mcpguard.Authorize(p),
			m(mcpguard.DryRun(p, opts)), // a write-path step: tells Recover of the write
			review62iPanicLimit(t),
		}
		if outerAudit {
			steps[0], steps[1] = steps[1], steps[0]
		}
		res, err := mcpguard.Chain(steps...)(tool)(context.Background(), req("add_note", `{}`))
		d, ok := mcpguard.DenialOf(res, err)
		if !ok {
			t.Fatalf("no refusal: %v %v", res, err)
		}
		return d
	}
	want := answer(false)
	if strings.Contains(want.Message, "may have been made") || want.RetryAfter < 0 {
		t.Fatalf("DESIGN order: %q retry after %v, want a call whose tool did not run", want.Message, want.RetryAfter)
	}
	got := answer(true)
	if ran != 0 {
		t.Fatalf("the tool ran %d times", ran)
	}
	if got.Message != want.Message {
		t.Errorf("Audit outside Recover: %q retry after %v; DESIGN order: %q retry after %v",
			got.Message, got.RetryAfter, want.Message, want.RetryAfter)
	}
}

// TestReview62iRouterOuterChainWithoutAudit: 62f's router case with an
// outer chain that has no Audit (Recover and a write-path step only). The
// inner chain's Audit finds the outer Recover's rc.ac empty and takes it
// (rc.ac = its own call), so the inner Cost panic marks the outer call
// "before the tool ran" again: the router, which wrote, is answered
// without "the write may have been made".
func TestReview62iRouterOuterChainWithoutAudit(t *testing.T) {
	p, m := stepPolicy(t), must(t)
	inner := &mcpguard.Options{Logger: quiet}
	ran, wrote := 0, 0
	innerChain := mcpguard.Chain(
		m(mcpguard.Audit(&memSink{}, inner)),
		mcpguard.Authenticate(fixed(bob)),
		review62iPanicLimit(t),
	)(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ran++
		return textResult("ok"), nil
	})
	router := func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		wrote++
		return innerChain(ctx, r)
	}
	outer := &mcpguard.Options{Logger: quiet}
	chain := mcpguard.Chain(
		mcpguard.Recover(quiet),
		mcpguard.Authenticate(fixed(bob)),
		mcpguard.Authorize(p),
		m(mcpguard.DryRun(p, outer)),
	)(router)
	res, err := chain(context.Background(), req("add_note", `{}`))
	got, ok := mcpguard.DenialOf(res, err)
	if !ok {
		t.Fatalf("no refusal: %v %v", res, err)
	}
	if wrote != 1 || ran != 0 {
		t.Fatalf("router wrote %d, inner tool ran %d; want 1, 0", wrote, ran)
	}
	if !strings.Contains(got.Message, "the write may have been made") {
		t.Errorf("%q retry after %v, want a write that may have been made (the router wrote)",
			got.Message, got.RetryAfter)
	}
}

// TestReview62iTwoAuditsPanicBeforeTool: a chain in DESIGN's order with two
// Audit middleware (two sinks, say a JSONL file and PostgreSQL). The
// Recover keeps the outer Audit's call (rc.ac), but a step sees the inner
// one's (auditCall), so a step's panic before the tool (a Cost function's
// bug), after a write-path step handed the write on, is answered "the
// write may have been made", as with one Audit it is not.
func TestReview62iTwoAuditsPanicBeforeTool(t *testing.T) {
	p, m := stepPolicy(t), must(t)
	opts := &mcpguard.Options{Logger: quiet}
	tool := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("ok"), nil
	}
	answer := func(audits int) *mcpguard.DenialError {
		steps := []mcpguard.Middleware{mcpguard.Recover(quiet)}
		for range audits {
			steps = append(steps, m(mcpguard.Audit(&memSink{}, opts)))
		}
		steps = append(steps,
			mcpguard.Authenticate(fixed(bob)),
			mcpguard.Authorize(p),
			m(mcpguard.DryRun(p, opts)),
			review62iPanicLimit(t),
		)
		res, err := mcpguard.Chain(steps...)(tool)(context.Background(), req("add_note", `{}`))
		d, ok := mcpguard.DenialOf(res, err)
		if !ok {
			t.Fatalf("no refusal: %v %v", res, err)
		}
		return d
	}
	want, got := answer(1), answer(2)
	if strings.Contains(want.Message, "may have been made") {
		t.Fatalf("one Audit: %q, want a call whose tool did not run", want.Message)
	}
	if got.Message != want.Message {
		t.Errorf("two Audits: %q; one Audit: %q", got.Message, want.Message)
	}
}
