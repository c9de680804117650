package limitcheck

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview29cFoldedAllowlistEntry: a write allowlist entry that is a tool
// rule's name only under folding ("Refund" for "refund") makes calls by that
// spelling callable, charged under the rule of such names, which costs the
// larger of the tool's Cost and the default rule's. A spend limit whose Max
// is below that refuses every such call for ever, and Find passed it: it
// checked the tool's own rule (Cost 1) and the default rule only where an
// entry without a rule resolves to it, never the folded rule an entry
// resolves to.
func TestReview29cFoldedAllowlistEntry(t *testing.T) {
	spend := func(tool string, max float64) limiter.Limit {
		return limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Tool: tool, Max: max, Window: time.Minute}
	}
	never := func(string, string) bool { return false }
	for _, tt := range []struct {
		name   string
		class  policy.Class // the class of the tool rule "refund"
		allow  []string
		limit  limiter.Limit
		priced func(string, string) bool
		want   *Problem
	}{
		{"write_every_tool", policy.Write, []string{"refund", "Refund"}, spend("", 5), never, &Problem{Limit: spend("", 5), Cost: 10, Rule: "Refund"}},
		{"write_for_tool", policy.Write, []string{"refund", "Refund"}, spend("refund", 5), never, &Problem{Limit: spend("refund", 5), Cost: 10, Rule: "Refund"}},
		{"write_for_spelling", policy.Write, []string{"refund", "Refund"}, spend("REFUND", 5), never, &Problem{Limit: spend("REFUND", 5), Cost: 10, Rule: "Refund"}},
		{"read_tool_every_tool", policy.Read, []string{"Refund"}, spend("", 5), never, &Problem{Limit: spend("", 5), Cost: 10, Rule: "Refund"}},
		{"read_tool_for_tool", policy.Read, []string{"Refund"}, spend("refund", 5), never, &Problem{Limit: spend("refund", 5), Cost: 10, Rule: "Refund"}},
		// A Cost function for the spelling may price its calls lower.
		{"spelling_priced", policy.Write, []string{"refund", "Refund"}, spend("", 5), func(_, r string) bool { return r == "Refund" }, nil},
		// Without the spelling on the allowlist, no call by it is admitted.
		{"spelling_not_listed", policy.Write, []string{"refund"}, spend("", 5), never, nil},
		{"max_at_cost", policy.Write, []string{"refund", "Refund"}, spend("", 10), never, nil},
		// A limit for another tool does not cap the spelling.
		{"other_tool", policy.Write, []string{"refund", "Refund", "ping"}, spend("ping", 5), func(string, string) bool { return true }, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tools := []policy.ToolRule{{Name: "refund", Class: tt.class, Cost: 1}, {Name: "ping", Class: policy.Write, Cost: 1}}
			p, err := policy.New(policy.Config{
				Tools:          tools,
				Default:        &policy.ToolRule{Class: policy.Write, Cost: 10},
				WriteAllowlist: tt.allow,
			})
			if err != nil {
				t.Fatal(err)
			}
			if r, _ := p.Resolve("Refund"); r.Cost != 10 {
				t.Fatalf("a call by Refund is charged %v, want 10 (the larger Cost)", r.Cost)
			}
			got := Find(p, []limiter.Limit{tt.limit}, tt.priced)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Find(%v) with allowlist %q (-want +got):\n%s", tt.limit, tt.allow, diff)
			}
		})
	}
}
