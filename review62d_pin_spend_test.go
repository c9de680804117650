package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review62dSpendRun makes the calls of amounts on a "pay" write tool whose
// cost is its amount (spend cap 100 per user per hour, 5 calls per user
// per hour), guarded by a Guard (chain false) or the stand-alone chain in
// DESIGN.md's order, and returns each answer, each outcome record, and
// the calls and spend the limiter still admits.
func review62dSpendRun(t *testing.T, chain bool, amounts []float64) string {
	t.Helper()
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Write}},
		WriteAllowlist: []string{"pay"}})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Max: 5, Window: time.Hour},
		{Kind: limiter.Spend, Scope: limiter.User, Max: 100, Window: time.Hour},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"],"additionalProperties":false}`)
	tool := &mcp.Tool{Name: "pay", InputSchema: schema}
	sink := &memSink{}
	opts := &mcpguard.Options{Audit: sink, Limiter: lim, Logger: quiet, Tools: map[string]mcpguard.ToolOptions{
		"pay": {Cost: func(a map[string]any) (float64, error) {
			switch v := a["amount"].(type) {
			case float64:
				return v, nil
			case json.Number:
				return v.Float64()
			}
			return 0, fmt.Errorf("amount %T", a["amount"])
		}},
	}}
	authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return bob, nil })
	ran := 0
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ran++
		return textResult("paid"), nil
	}
	var h mcp.ToolHandler
	if chain {
		auditStep, err := mcpguard.Audit(sink, opts)
		if err != nil {
			t.Fatal(err)
		}
		v, err := mcpguard.NewValidator(schema, nil)
		if err != nil {
			t.Fatal(err)
		}
		limitStep, err := mcpguard.Limit(lim, p, opts)
		if err != nil {
			t.Fatal(err)
		}
		wa, err := mcpguard.WriteAhead(sink, p, opts)
		if err != nil {
			t.Fatal(err)
		}
		h = mcpguard.Chain(mcpguard.Recover(quiet), auditStep, mcpguard.Authenticate(authn),
			mcpguard.Authorize(p), mcpguard.ValidateArguments(v), limitStep, wa)(ok)
	} else {
		g, err := mcpguard.New(p, authn, opts)
		if err != nil {
			t.Fatal(err)
		}
		if h, err = g.Wrap(tool, ok); err != nil {
			t.Fatal(err)
		}
	}
	out := ""
	for _, a := range amounts {
		res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "pay", Arguments: json.RawMessage(fmt.Sprintf(`{"amount":%v}`, a))}})
		if d, ok := mcpguard.DenialOf(res, err); ok {
			out += fmt.Sprintf("[%v: %s retryable=%v wait=%v]", a, d.Code, d.Retryable(), d.RetryAfter.Round(time.Minute))
		} else {
			out += fmt.Sprintf("[%v: ok]", a)
		}
	}
	for _, ev := range sink.all() {
		if ev.Phase == "outcome" {
			out += fmt.Sprintf(" {%v %s cost=%v}", ev.Allowed, ev.Code, ev.Cost)
		}
	}
	left := 0
	for range 6 {
		if d := lim.AllowAt(context.Background(), time.Now(), limiter.Request{User: "bob", Calls: 1}); d.Allowed {
			left++
		}
	}
	spendOK := lim.AllowAt(context.Background(), time.Now(), limiter.Request{User: "bob", Cost: 40}).Allowed
	return fmt.Sprintf("%s ran=%d calls_left=%d spend40_fits=%v", out, ran, left, spendOK)
}

// TestReview62dPinSpendChainMatchesGuard pins DESIGN.md step 8 for the spend
// cap with a cost that is a function of the arguments: a call whose cost
// does not fit is refused SPEND_LIMIT_EXCEEDED with a wait, one that costs
// more than the cap holds in all is refused not retryable, neither
// consumes anything (not its call against the rate either), and the chain
// of stand-alone steps answers, charges and records each call as the
// Guard does.
func TestReview62dPinSpendChainMatchesGuard(t *testing.T) {
	amounts := []float64{60, 50, 150, 40}
	g := review62dSpendRun(t, false, amounts)
	ch := review62dSpendRun(t, true, amounts)
	want := "[60: ok][50: SPEND_LIMIT_EXCEEDED retryable=true wait=6m0s][150: SPEND_LIMIT_EXCEEDED retryable=false wait=0s]" +
		"[40: ok] {true  cost=60} {false SPEND_LIMIT_EXCEEDED cost=0} {false SPEND_LIMIT_EXCEEDED cost=0} {true  cost=40}" +
		" ran=2 calls_left=3 spend40_fits=false"
	if g != want {
		t.Errorf("guard:\n got %s\nwant %s", g, want)
	}
	if ch != g {
		t.Errorf("chain and Guard differ:\nguard %s\nchain %s", g, ch)
	}
}
