package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview26cSpendLimitForCostlessTool: without a Cost function a call
// is charged its rule's Cost, so a spend limit for one tool whose rules
// (its own, those of its other spellings, the default rule) cost nothing
// caps nothing: every call is charged 0. mcpguard.New refuses such a
// limit; gateway.New accepted it. A spend limit for every tool, a Cost
// function, a cost in a rule the tool's name may resolve to, or a rate
// limit is accepted.
func TestReview26cSpendLimitForCostlessTool(t *testing.T) {
	tools := []policy.ToolRule{{Name: "search", Class: policy.Read}, {Name: "pay", Class: policy.Read, Cost: 2}}
	pol := func(def *policy.ToolRule) *policy.Policy {
		p, err := policy.New(policy.Config{Tools: tools, Default: def})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	lim := func(kind limiter.Kind, tool string) *limiter.Limiter {
		// Max 2: pay's Cost (a Max below it refuses every call of pay for ever).
		l, err := limiter.New([]limiter.Limit{{Kind: kind, Scope: limiter.User, Tool: tool, Max: 2, Window: time.Minute}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	cost := func(string, policy.Args) float64 { return 1 }
	for _, tt := range []struct {
		name string
		opts *Options
		want string // "" for accepted
	}{
		{"costless_tool", &Options{Policy: pol(nil), Limiter: lim(limiter.Spend, "search")}, `"search"`},
		{"costless_other_spelling", &Options{Policy: pol(nil), Limiter: lim(limiter.Spend, "SEARCH")}, `"SEARCH"`},
		{"costless_default", &Options{Policy: pol(&policy.ToolRule{Class: policy.Read}), Limiter: lim(limiter.Spend, "other")}, `"other"`},
		{"default_policy", &Options{Limiter: lim(limiter.Spend, "admin_reset")}, `"admin_reset"`},
		{"cost_function", &Options{Policy: pol(nil), Limiter: lim(limiter.Spend, "search"), Cost: cost}, ""},
		{"rule_cost", &Options{Policy: pol(nil), Limiter: lim(limiter.Spend, "pay")}, ""},
		{"rule_cost_other_spelling", &Options{Policy: pol(nil), Limiter: lim(limiter.Spend, "PAY")}, ""},
		{"default_cost", &Options{Policy: pol(&policy.ToolRule{Class: policy.Read, Cost: 1}), Limiter: lim(limiter.Spend, "SEARCH")}, ""},
		{"every_tool", &Options{Policy: pol(nil), Limiter: lim(limiter.Spend, "")}, ""},
		{"rate", &Options{Policy: pol(nil), Limiter: lim(limiter.Rate, "search")}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New("http://127.0.0.1:1/mcp", DemoTokens(), tt.opts)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "costs nothing")):
				t.Fatalf("New = %v, want an error naming %s and saying it costs nothing", err, tt.want)
			}
		})
	}
}
