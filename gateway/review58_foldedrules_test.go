package gateway

import (
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview58FoldedRulesThatDiffer: a policy with rules for "refund" (a
// write for the role finance) and "Refund" (a read, open to all) was
// taken: at a downstream that matches names leniently, a viewer calling
// "Refund" ran refund under the open rule. New and SetPolicy refuse two
// rules whose names differ only in case and whose demands differ; the same
// rule under two spellings is taken.
func TestReview58FoldedRulesThatDiffer(t *testing.T) {
	mk := func(rules ...policy.ToolRule) *policy.Policy {
		t.Helper()
		var allow []string
		for _, r := range rules {
			if r.Name == "refund" {
				allow = []string{"refund"}
			}
		}
		p, err := policy.New(policy.Config{Tools: rules, WriteAllowlist: allow})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	write := policy.ToolRule{Name: "refund", Class: policy.Write, Roles: []string{"finance"}}
	for name, tc := range map[string]struct {
		p    *policy.Policy
		want bool // refused
	}{
		"read_open":      {mk(write, policy.ToolRule{Name: "Refund", Class: policy.Read}), true},
		"other_roles":    {mk(write, policy.ToolRule{Name: "REFUND", Class: policy.Write, Roles: []string{"viewer"}}), true},
		"off_allowlist":  {mk(write, policy.ToolRule{Name: "Refund", Class: policy.Write, Roles: []string{"finance"}, Cost: 0}), true},
		"other_cost":     {mk(policy.ToolRule{Name: "lookup", Class: policy.Read, Cost: 1}, policy.ToolRule{Name: "LOOKUP", Class: policy.Read, Cost: 2}), true},
		"same_rule":      {mk(policy.ToolRule{Name: "lookup", Class: policy.Read}, policy.ToolRule{Name: "Lookup", Class: policy.Read}), false},
		"no_fold_at_all": {mk(write, policy.ToolRule{Name: "refund_status", Class: policy.Read}), false},
	} {
		_, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Policy: tc.p, Logger: discardLogger()})
		if refused := err != nil; refused != tc.want || refused && !strings.Contains(err.Error(), "differ only in case") {
			t.Errorf("%s: New: %v; want refused %v", name, err, tc.want)
		}
		g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.SetPolicy(tc.p); (err != nil) != tc.want {
			t.Errorf("%s: SetPolicy: %v; want refused %v", name, err, tc.want)
		}
	}
}
