package mcpguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview62fRouterInnerPanicMarksOuterCall: a write's handler that
// passes its own request on to another guarded chain in-process (a
// router: execute.go's docs name it) whose chain has an Audit of its own
// but no Recover (the outer one catches its panics). A step of the inner
// chain that panics before the inner tool (a Cost function's bug) marks
// the outer Recover's call "before the tool ran" (recoverCall matches the
// request alone): the outer write, whose handler ran and wrote, is
// answered retryable, without "the write may have been made", where a
// Guard around the same router answers a write that may have been made.
func TestReview62fRouterInnerPanicMarksOuterCall(t *testing.T) {
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, m := stepPolicy(t), must(t)
	inner := &mcpguard.Options{Logger: quiet, Tools: map[string]mcpguard.ToolOptions{
		"add_note": {Cost: func(map[string]any) (float64, error) { panic("review62f: Cost's bug") }},
	}}
	var wrote, ran int
	innerChain := mcpguard.Chain(
		m(mcpguard.Audit(&memSink{}, inner)),
		mcpguard.Authenticate(fixed(bob)),
		m(mcpguard.Limit(lim, p, inner)),
	)(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ran++
		return textResult("ok"), nil
	})
	router := func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		wrote++ // the router's own write, made before it passes the call on
		return innerChain(ctx, r)
	}
	answer := func(h mcp.ToolHandler) *mcpguard.DenialError {
		res, err := h(context.Background(), req("add_note", `{}`))
		d, ok := mcpguard.DenialOf(res, err)
		if !ok {
			t.Fatalf("no refusal: %v %v", res, err)
		}
		return d
	}
	g, err := mcpguard.New(p, fixed(bob), &mcpguard.Options{Logger: quiet, NoWriteAhead: true, Confirmer: testSigner(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	wrapped, err := g.Wrap(&mcp.Tool{Name: "add_note", InputSchema: json.RawMessage(`{"type":"object"}`)}, router)
	if err != nil {
		t.Fatal(err)
	}
	want := answer(wrapped)
	if !strings.Contains(want.Message, "the write may have been made") || want.Retryable() {
		t.Fatalf("Guard: %q retry after %v, want a write that may have been made", want.Message, want.RetryAfter)
	}
	outer := &mcpguard.Options{Logger: quiet}
	chain := mcpguard.Chain(
		mcpguard.Recover(quiet),
		m(mcpguard.Audit(&memSink{}, outer)),
		mcpguard.Authenticate(fixed(bob)),
		mcpguard.Authorize(p),
		m(mcpguard.DryRun(p, outer)), // a write-path step: it knows the call is a write
	)(router)
	got := answer(chain)
	if wrote != 2 || ran != 0 {
		t.Fatalf("the router wrote %d times, the inner tool ran %d times; want 2, 0", wrote, ran)
	}
	if got.Message != want.Message || got.Retryable() != want.Retryable() {
		t.Errorf("chain: %q retryable %v; Guard: %q retryable %v", got.Message, got.Retryable(), want.Message, want.Retryable())
	}
}
