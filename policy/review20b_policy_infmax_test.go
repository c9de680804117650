package policy_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview20bInfiniteMaxAllowsEveryNumber: New accepts an argument limit
// whose Max is +Inf (only NaN is refused), and every finite number is at
// most +Inf. Since the exact comparison runs for every number with text
// (777ff99), jsonnum.Above compared with "+Inf", which is not a decimal, and
// refused every json.Number (and every call through the gateway), while the
// same value as a float64 passed.
func TestReview20bInfiniteMaxAllowsEveryNumber(t *testing.T) {
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{{
		Name: "refund", Class: policy.Read,
		ArgLimits: []policy.ArgLimit{{Field: "amount", Max: math.Inf(1)}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []policy.MapArgs{
		{"amount": 5.0}, {"amount": json.Number("5")}, {"amount": json.Number("1e308")},
		{"amount": json.Number("1.7976931348623157e308")},
	} {
		if d := p.Decide(nil, "refund", a); !d.Allowed() {
			t.Errorf("amount %v (%T) under Max +Inf: %v, want allowed", a["amount"], a["amount"], d.Reason)
		}
	}
	// Beyond float64 and not JSON: refused, as under any Max.
	for _, a := range []policy.MapArgs{{"amount": json.Number("1e400")}, {"amount": json.Number("-1e400")}, {"amount": json.Number("+5")}} {
		if d := p.Decide(nil, "refund", a); d.Allowed() {
			t.Errorf("amount %v under Max +Inf: allowed, want refused", a["amount"])
		}
	}
	// Max -Inf allows nothing.
	q, err := policy.New(policy.Config{Tools: []policy.ToolRule{{
		Name: "refund", Class: policy.Read,
		ArgLimits: []policy.ArgLimit{{Field: "amount", Max: math.Inf(-1)}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []policy.MapArgs{{"amount": json.Number("-1e308")}, {"amount": -1e308}} {
		if d := q.Decide(nil, "refund", a); d.Allowed() {
			t.Errorf("amount %v under Max -Inf: allowed, want refused", a["amount"])
		}
	}
}
