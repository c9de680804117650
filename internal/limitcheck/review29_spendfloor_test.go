package limitcheck

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview29FindSpendBelowCost: Find reports a spend limit whose Max is
// below the fixed cost of a rule it applies to, with that cost and the
// rule's name ("" for the default rule), unless priced reports the rule's
// key (the empty key for the default rule under a limit for every tool)
// priced by a Cost function. A cost equal to Max, and rate and
// concurrency limits, are not reported.
func TestReview29FindSpendBelowCost(t *testing.T) {
	p, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "search", Class: policy.Read, Cost: 5},
			{Name: "Fetch", Class: policy.Read, Cost: 1},
			{Name: "fetch", Class: policy.Read, Cost: 4},
		},
		Default: &policy.ToolRule{Class: policy.Read, Cost: 6},
	})
	if err != nil {
		t.Fatal(err)
	}
	spend := func(tool string, max float64) limiter.Limit {
		return limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Tool: tool, Max: max, Window: time.Minute}
	}
	none := func(string, string) bool { return false }
	only := func(name string) func(string, string) bool {
		return func(k, _ string) bool { return k == policy.NameKey(name) }
	}
	for _, tt := range []struct {
		name   string
		limits []limiter.Limit
		priced func(string, string) bool
		want   *Problem
	}{
		{"tool", []limiter.Limit{spend("search", 4.5)}, none, &Problem{Limit: spend("search", 4.5), Cost: 5, Rule: "search"}},
		{"tool_equal", []limiter.Limit{spend("search", 5)}, none, nil},
		{"tool_priced", []limiter.Limit{spend("search", 4.5)}, only("search"), nil},
		{"other_spelling", []limiter.Limit{spend("SEARCH", 4.5)}, none, &Problem{Limit: spend("SEARCH", 4.5), Cost: 5, Rule: "search"}},
		{"folded_rules", []limiter.Limit{spend("FETCH", 3)}, none, &Problem{Limit: spend("FETCH", 3), Cost: 4, Rule: "fetch"}},
		{"folded_rules_fit", []limiter.Limit{spend("FETCH", 4)}, none, nil},
		{"default_for_tool", []limiter.Limit{spend("other", 5.5)}, none, &Problem{Limit: spend("other", 5.5), Cost: 6}},
		{"default_for_tool_priced", []limiter.Limit{spend("other", 5.5)}, only("other"), nil},
		// A spelling of a tool rule's name costs the larger of the two
		// rules' costs, but the tool's own name costs its rule's.
		{"default_above_rule", []limiter.Limit{spend("Search", 5.5)}, none, nil},
		{"every_tool", []limiter.Limit{spend("", 4.5)}, none, &Problem{Limit: spend("", 4.5), Cost: 5, Rule: "search"}},
		{"every_tool_default", []limiter.Limit{spend("", 5.5)}, none, &Problem{Limit: spend("", 5.5), Cost: 6}},
		{"every_tool_default_priced", []limiter.Limit{spend("", 5.5)}, only(""), nil},
		{"every_tool_equal", []limiter.Limit{spend("", 6)}, none, nil},
		{"second_limit", []limiter.Limit{spend("", 6), spend("search", 4.5)}, none, &Problem{Limit: spend("search", 4.5), Cost: 5, Rule: "search"}},
		{"rate_and_concurrency", []limiter.Limit{
			{Kind: limiter.Rate, Scope: limiter.Global, Max: 1, Window: time.Minute},
			{Kind: limiter.Rate, Scope: limiter.Session, Tool: "search", Max: 1, Window: time.Minute},
			{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 1},
			{Kind: limiter.Concurrency, Scope: limiter.User, Tool: "search", Max: 1},
		}, none, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Find(p, tt.limits, tt.priced)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Find(%v) (-want +got):\n%s", tt.limits, diff)
			}
		})
	}
}

// TestReview29FindSpendBelowCostWrites: a write tool not on the write
// allowlist is never admitted, whatever it costs, so a spend limit below
// its cost changes nothing and is not reported; one on the allowlist is.
// The default rule's writes are admitted for the names on the allowlist
// without a rule of their own: reported for a limit for such a name (under
// folding), or for every tool when the allowlist has one, or is a lone "*".
func TestReview29FindSpendBelowCostWrites(t *testing.T) {
	pol := func(allow ...string) *policy.Policy {
		p, err := policy.New(policy.Config{
			Tools: []policy.ToolRule{
				{Name: "create", Class: policy.Write, Cost: 5},
				{Name: "delete", Class: policy.Write, Cost: 5},
				{Name: "list", Class: policy.Read, Cost: 1},
			},
			Default:        &policy.ToolRule{Class: policy.Write, Cost: 6},
			WriteAllowlist: allow,
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	polRead := func() *policy.Policy {
		p, err := policy.New(policy.Config{Default: &policy.ToolRule{Class: policy.Read, Cost: 6}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	spend := func(tool string, max float64) limiter.Limit {
		return limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Tool: tool, Max: max, Window: time.Minute}
	}
	none := func(string, string) bool { return false }
	for _, tt := range []struct {
		name   string
		p      *policy.Policy
		limits []limiter.Limit
		want   *Problem
	}{
		{"not_allowed", pol(), []limiter.Limit{spend("create", 3), spend("", 3)}, nil},
		{"allowed", pol("delete"), []limiter.Limit{spend("create", 3), spend("", 3)}, &Problem{Limit: spend("", 3), Cost: 5, Rule: "delete"}},
		{"allowed_other_spelling", pol("create"), []limiter.Limit{spend("CREATE", 3)}, &Problem{Limit: spend("CREATE", 3), Cost: 5, Rule: "create"}},
		{"default_not_allowed", pol("other"), []limiter.Limit{spend("another", 5.5)}, nil},
		// "other", allowlisted, has the default rule: every call of it
		// would cost 6.
		{"default_allowed_every_tool", pol("other"), []limiter.Limit{spend("", 5.5)}, &Problem{Limit: spend("", 5.5), Cost: 6}},
		{"default_allowed_other_spelling", pol("Other"), []limiter.Limit{spend("other", 5.5)}, &Problem{Limit: spend("other", 5.5), Cost: 6}},
		{"default_read", polRead(), []limiter.Limit{spend("", 5.5)}, &Problem{Limit: spend("", 5.5), Cost: 6}},
		{"default_allowed", pol("other"), []limiter.Limit{spend("other", 5.5)}, &Problem{Limit: spend("other", 5.5), Cost: 6}},
		{"default_every_write", pol("*"), []limiter.Limit{spend("", 5.5)}, &Problem{Limit: spend("", 5.5), Cost: 6}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Find(tt.p, tt.limits, none)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Find(%v) (-want +got):\n%s", tt.limits, diff)
			}
		})
	}
}
