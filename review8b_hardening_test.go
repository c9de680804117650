package mcpguard_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview8bWriteAheadRefundsEveryLimitOutside composes two Limit steps
// (a per-user cap and a second limiter, as a deployment with a shared and
// a local limiter would) around WriteAhead. WriteAhead's doc says that when
// the intent cannot be made "a [Limit] step outside it gives back what it
// charged", and a refused call consumes nothing, so once the trail is back
// the retry the refusal invites should pass both caps of one call. Instead
// only the innermost Limit is refunded (limitCall finds the nearest
// limitCtx only): the outer limiter keeps the charge of a call that never
// ran, and the retry is refused with RATE_LIMIT_EXCEEDED.
func TestReview8bWriteAheadRefundsEveryLimitOutside(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "pay", Class: policy.Write, Cost: 1}},
		WriteAllowlist: []string{"pay"},
	})
	if err != nil {
		t.Fatal(err)
	}
	newLim := func() *limiter.Limiter {
		l, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	o := &mcpguard.Options{Logger: quiet}
	outer, err := mcpguard.Limit(newLim(), pol, o)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := mcpguard.Limit(newLim(), pol, o)
	if err != nil {
		t.Fatal(err)
	}
	sink := &intentFailSink{}
	ahead, err := mcpguard.WriteAhead(sink, pol, o)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	h := mcpguard.Chain(mcpguard.Recover(quiet), mustAudit(t, sink, o), mcpguard.Authenticate(fixed(bob)),
		mcpguard.Authorize(pol), outer, inner, ahead)(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ran++
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})

	sink.down.Store(true)
	res, err := h(context.Background(), req("pay", `{}`))
	if got := codeOf(t, res, err); got != "AUDIT_UNAVAILABLE" {
		t.Fatalf("first call: %q, want AUDIT_UNAVAILABLE", got)
	}
	sink.down.Store(false)
	res, err = h(context.Background(), req("pay", `{}`))
	if got := codeOf(t, res, err); got != "" {
		t.Errorf("retry once the trail is back: %q, want it allowed (the refused call should have consumed nothing in either limiter)", got)
	}
	if ran != 1 {
		t.Errorf("handler ran %d times, want 1", ran)
	}
}

// TestReview8bValidateOutputNilValidator: a tool without an output schema
// has no validator (NewOutputValidator refuses a nil schema), and the
// Guard's step 11 then lets its results through (serve.go checks e.out !=
// nil). ValidateOutput(nil) is accepted without complaint, so a user would
// expect the same pass-through, or at least a refusal at composition time.
// Instead every successful call is handled after its handler ran: a result
// without structured content is refused as INVALID_RESPONSE, and one with
// structured content panics on the nil *Validator (install.go checkOutput ->
// ValidateValue), so a write that was made is answered as an internal
// failure.
func TestReview8bValidateOutputNilValidator(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  *mcp.CallToolResult
	}{
		{"text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}},
		{"structured", &mcp.CallToolResult{StructuredContent: map[string]any{"id": "p-1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := mcpguard.ValidateOutput(nil)(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return tc.res, nil
			})
			var (
				res *mcp.CallToolResult
				err error
			)
			func() {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("panic: %v", r)
					}
				}()
				res, err = h(context.Background(), req("pay", `{}`))
			}()
			if got := codeOf(t, res, err); got != "" {
				t.Errorf("ValidateOutput(nil): %q, want the result passed through as a Guard does for a tool without an output schema", got)
			}
		})
	}
}

// TestReview8bWriteAheadCostFailureRefunds: a tool's Cost function reads
// the arguments and may fail (a price lookup); WriteAhead evaluates it
// again (begin -> plan) after the Limit step outside has charged the call.
// When that second evaluation fails, WriteAhead refuses the call, whose
// handler never runs, but does not give back the charge (the refund is
// made only on the intent-failure path, execute.go), although a refused
// call consumes nothing: the next call is refused with
// RATE_LIMIT_EXCEEDED. The user would expect the refusal to refund, or
// WriteAhead not to refuse on a cost it does not use.
func TestReview8bWriteAheadCostFailureRefunds(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "pay", Class: policy.Write}},
		WriteAllowlist: []string{"pay"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	o := &mcpguard.Options{Logger: quiet, Tools: map[string]mcpguard.ToolOptions{"pay": {Cost: func(map[string]any) (float64, error) {
		n++
		if n == 2 { // the price service fails once, on WriteAhead's look-up of the first call
			return 0, fmt.Errorf("price service down")
		}
		return 1, nil
	}}}}
	limit, err := mcpguard.Limit(lim, pol, o)
	if err != nil {
		t.Fatal(err)
	}
	sink := &intentFailSink{}
	ahead, err := mcpguard.WriteAhead(sink, pol, o)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	h := mcpguard.Chain(mcpguard.Authenticate(fixed(bob)), limit, ahead)(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ran++
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	res, err := h(context.Background(), req("pay", `{}`))
	first, ranFirst := codeOf(t, res, err), ran
	res, err = h(context.Background(), req("pay", `{}`))
	second := codeOf(t, res, err)
	if first == "" {
		return // WriteAhead no longer refuses on the cost: nothing to give back
	}
	if ranFirst != 0 {
		t.Fatalf("handler ran %d times for a refused call", ranFirst)
	}
	if second != "" {
		t.Errorf("first call refused with %s without running; the next call: %q, want it allowed (the refused call should have been given back its charge)", first, second)
	}
}

// TestReview8bNestedRefundKeepsOuterRecord: a handler behind the chain that
// forwards the call it was given (the same request, with its context) to
// another guarded chain, a sub-server's with its own Audit and WriteAhead,
// is the dispatcher the brief of adee0a0 describes. When the inner intent
// cannot be made, the inner WriteAhead gives back the outer Limit's charge
// (limitCall matches the outer limitCtx by the request), but tells the
// inner Audit about it (limitCtx.refund looks the record up from the inner
// context, execute.go), so the outer record keeps cost 5 for a charge the
// limiter no longer holds: the next call passes a spend cap of 5 while the
// trail already shows 5 spent. A user expects the record and the limiter to
// agree: the outer record of a refunded call says cost 0 (or nothing is
// refunded).
func TestReview8bNestedRefundKeepsOuterRecord(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "pay", Class: policy.Write, Cost: 5}},
		WriteAllowlist: []string{"pay"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 5, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := &mcpguard.Options{Logger: quiet}
	limit, err := mcpguard.Limit(lim, pol, o)
	if err != nil {
		t.Fatal(err)
	}
	innerSink := &intentFailSink{}
	ahead, err := mcpguard.WriteAhead(innerSink, pol, o)
	if err != nil {
		t.Fatal(err)
	}
	sub := mcpguard.Chain(mustAudit(t, innerSink, o), ahead)(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	outerSink := &memSink{}
	h := mcpguard.Chain(mustAudit(t, outerSink, o), mcpguard.Authenticate(fixed(bob)), mcpguard.Authorize(pol), limit)(
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return sub(ctx, r) // a dispatcher: the call goes on to the sub-server's chain
		})

	innerSink.down.Store(true)
	res, err := h(context.Background(), req("pay", `{}`))
	if got := codeOf(t, res, err); got != "AUDIT_UNAVAILABLE" {
		t.Fatalf("first call: %q, want AUDIT_UNAVAILABLE", got)
	}
	innerSink.down.Store(false)
	res, err = h(context.Background(), req("pay", `{}`))
	refunded := codeOf(t, res, err) == ""
	evs := outerSink.all()
	if len(evs) != 2 {
		t.Fatalf("outer records: %d, want 2", len(evs))
	}
	if refunded && evs[0].Cost != 0 {
		t.Errorf("the limiter gave the first call's charge back (the second call passed a spend cap of 5), but the outer record of the first call says cost %v: record and limiter disagree", evs[0].Cost)
	}
}
