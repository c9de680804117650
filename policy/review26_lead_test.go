package policy_test

import (
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview26RoleRuleNamingNoTool: without a default rule, a role rule
// whose pattern is a name no tool rule has (a typo) protects nothing, and
// the tool meant ran for every role: New refuses it. The same name under
// folding, a prefix pattern, or any name under a default rule is
// accepted.
func TestReview26RoleRuleNamingNoTool(t *testing.T) {
	tools := []policy.ToolRule{{Name: "refund", Class: policy.Read}, {Name: "get_order", Class: policy.Read}}
	_, err := policy.New(policy.Config{Tools: tools, RoleRules: []policy.RoleRule{{Pattern: "refnd", Roles: []string{"finance"}}}})
	if err == nil || !strings.Contains(err.Error(), `"refnd"`) {
		t.Fatalf("New with role rule refnd = %v, want an error naming it", err)
	}
	for _, c := range []policy.Config{
		{Tools: tools, RoleRules: []policy.RoleRule{{Pattern: "refund", Roles: []string{"finance"}}}},
		{Tools: tools, RoleRules: []policy.RoleRule{{Pattern: "REFUND", Roles: []string{"finance"}}}},
		{Tools: tools, RoleRules: []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}}},
		{Tools: tools, RoleRules: []policy.RoleRule{{Pattern: "refnd", Roles: []string{"finance"}}}, Default: &policy.ToolRule{Class: policy.Read}},
	} {
		if _, err := policy.New(c); err != nil {
			t.Errorf("New(%+v): %v", c.RoleRules, err)
		}
	}
	// The typo let everyone run the tool it meant to guard.
	p, err := policy.New(policy.Config{Tools: tools, RoleRules: []policy.RoleRule{{Pattern: "refund", Roles: []string{"finance"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Authorize(&policy.Principal{Subject: "sam", Roles: []string{"support"}}, "refund"); d.Allowed() {
		t.Error("support may call refund under a role rule for finance")
	}
}
