package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview29bSetPolicySpendBelowCost: SetPolicy refuses, as its doc now
// says, a policy under which a spend limit of the gateway's Limiter is
// below the Cost of a rule it caps (without Options.Cost), and keeps the
// policy it has; with Options.Cost it is accepted.
func TestReview29bSetPolicySpendBelowCost(t *testing.T) {
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Tool: "search", Max: 3, Window: time.Minute}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pol := func(cost float64) *policy.Policy {
		p, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "search", Class: policy.Read, Cost: cost}}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := pol(3)
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Policy: first, Limiter: lim})
	if err != nil {
		t.Fatal(err)
	}
	err = g.SetPolicy(pol(5))
	if err == nil || !strings.Contains(err.Error(), `tool "search" costs 5`) {
		t.Fatalf("SetPolicy with search costing 5 against a spend limit of 3: %v", err)
	}
	if g.Policy() != first {
		t.Fatal("a refused SetPolicy replaced the policy")
	}
	g, err = New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Policy: first, Limiter: lim, Cost: func(string, policy.Args) float64 { return 1 }})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetPolicy(pol(5)); err != nil {
		t.Fatalf("SetPolicy with Options.Cost: %v", err)
	}
}
