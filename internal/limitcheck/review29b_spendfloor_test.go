package limitcheck

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview29bFindAsksByRule: whether a Cost function may price the calls
// of a tool rule below its Cost is asked of that rule (priced(key, name)),
// not of its key: a Cost function for another spelling of the name prices
// no call of the tool lower (mcpguard costs such a call the larger of the
// two), and Find took one for the key as pricing the tool. Whether a limit
// caps something at all, and the default rule, are still asked of the key
// (priced(key, "")).
func TestReview29bFindAsksByRule(t *testing.T) {
	p, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "search", Class: policy.Read, Cost: 5},
			{Name: "ping", Class: policy.Read},
		},
		Default: &policy.ToolRule{Class: policy.Read},
	})
	if err != nil {
		t.Fatal(err)
	}
	spend := func(tool string, max float64) limiter.Limit {
		return limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Tool: tool, Max: max, Window: time.Minute}
	}
	// keyOnly prices names of the key of name, but not name itself, a tool
	// rule's: a Cost function for another spelling only.
	keyOnly := func(name string) func(string, string) bool {
		return func(k, rule string) bool { return rule == "" && k == policy.NameKey(name) }
	}
	rule := func(name string) func(string, string) bool {
		return func(_, r string) bool { return r == name }
	}
	for _, tt := range []struct {
		name   string
		limits []limiter.Limit
		priced func(string, string) bool
		want   *Problem
	}{
		{"other_spelling", []limiter.Limit{spend("search", 3)}, keyOnly("search"), &Problem{Limit: spend("search", 3), Cost: 5, Rule: "search"}},
		{"other_spelling_every_tool", []limiter.Limit{spend("", 3)}, keyOnly("search"), &Problem{Limit: spend("", 3), Cost: 5, Rule: "search"}},
		{"own_name", []limiter.Limit{spend("SEARCH", 3)}, rule("search"), nil},
		{"own_name_every_tool", []limiter.Limit{spend("", 3)}, rule("search"), nil},
		// ping costs nothing but by a Cost function: one for any name of
		// its key lets the limit cap something.
		{"costless_key_priced", []limiter.Limit{spend("ping", 3)}, keyOnly("ping"), nil},
		{"costless", []limiter.Limit{spend("ping", 3)}, rule("ping"), &Problem{Limit: spend("ping", 3)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Find(p, tt.limits, tt.priced)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Find(%v) (-want +got):\n%s", tt.limits, diff)
			}
		})
	}
}
