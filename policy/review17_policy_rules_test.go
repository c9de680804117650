package policy_test

import (
	"slices"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestRoleRulesAllApplyInAnyOrder: role rules have no order and no "most
// specific wins": every rule that matches a tool applies, so a narrower
// rule written to name another role for one tool never loosens a broader
// one, and the same rules in any order decide alike. Roles are exact: a
// role that differs in letter case, by a look-alike letter or by white
// space grants nothing and exempts from nothing.
func TestRoleRulesAllApplyInAnyOrder(t *testing.T) {
	rules := []policy.RoleRule{
		{Pattern: "admin_*", Roles: []string{"admin"}},
		{Pattern: "admin_status", Roles: []string{"viewer"}}, // does not open admin_status to viewers
		{Pattern: "admin_*", Roles: []string{"admin"}},       // a duplicate changes nothing
		{Pattern: "*", Roles: []string{"admin", "viewer"}},
	}
	tools := []policy.ToolRule{
		{Name: "admin_status", Class: policy.Read},
		{Name: "trigger_refund", Class: policy.Write, Roles: []string{"support"},
			ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 100, ExemptRoles: []string{"finance"}}}},
	}
	who := map[string]*policy.Principal{
		"viewer":         {Subject: "v", Roles: []string{"viewer"}},
		"admin":          {Subject: "a", Roles: []string{"admin"}},
		"admin_viewer":   {Subject: "av", Roles: []string{"viewer", "admin"}},
		"Admin":          {Subject: "A", Roles: []string{"Admin", "viewer"}},
		"cyrillic_admin": {Subject: "c", Roles: []string{"\u0430dmin", "viewer"}}, // Cyrillic a
		"admin_space":    {Subject: "s", Roles: []string{"admin ", "viewer"}},
		"support":        {Subject: "su", Roles: []string{"support", "viewer"}},
		"finance":        {Subject: "f", Roles: []string{"support", "viewer", "finance"}},
		"Finance":        {Subject: "F", Roles: []string{"support", "viewer", "Finance"}},
	}
	calls := []struct {
		who, tool string
		args      policy.Args
		want      policy.Code
	}{
		{"viewer", "admin_status", nil, policy.NotFound},
		{"admin", "admin_status", nil, policy.NotFound}, // the narrower rule demands viewer too
		{"admin_viewer", "admin_status", nil, policy.Allowed},
		{"Admin", "admin_status", nil, policy.NotFound},
		{"cyrillic_admin", "admin_status", nil, policy.NotFound},
		{"admin_space", "admin_status", nil, policy.NotFound},
		{"viewer", "trigger_refund", policy.MapArgs{"amount": 5.0}, policy.NotFound},
		{"support", "trigger_refund", policy.MapArgs{"amount": 5.0}, policy.Allowed},
		{"support", "trigger_refund", policy.MapArgs{"amount": 500.0}, policy.Forbidden},
		{"finance", "trigger_refund", policy.MapArgs{"amount": 500.0}, policy.Allowed},
		{"Finance", "trigger_refund", policy.MapArgs{"amount": 500.0}, policy.Forbidden},
	}
	orders := [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}}
	for _, order := range orders {
		var rr []policy.RoleRule
		for _, i := range order {
			rr = append(rr, rules[i])
		}
		p, err := policy.New(policy.Config{Tools: tools, RoleRules: rr, WriteAllowlist: []string{"trigger_refund"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range calls {
			if d := p.Decide(who[c.who], c.tool, c.args); d.Code != c.want {
				t.Errorf("rules in order %v: %s calls %s: %q (%s), want %q", order, c.who, c.tool, d.Code, d.Reason, c.want)
			}
		}
		got := p.RequiredRoles("admin_status")
		for _, want := range [][]string{{"admin"}, {"viewer"}, {"admin", "viewer"}} {
			if !slices.ContainsFunc(got, func(r []string) bool { return slices.Equal(r, want) }) {
				t.Errorf("rules in order %v: RequiredRoles(admin_status) = %v, want %v among them", order, got, want)
			}
		}
	}
}
