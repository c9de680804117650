package policy

import (
	"strings"
	"testing"
)

// TestNewRefusesEmptyRoleNames: an empty role name in a rule is always a
// configuration mistake (a trailing comma in a role list, an unset
// variable). Accepted, it is a role that a principal built by a lax
// authenticator may carry ("a,,b" split on commas gives ""): then
// ExemptRoles: [""] lifts an argument limit, and Roles: [""] grants a tool,
// for such a caller. New must name the bad rule instead.
func TestNewRefusesEmptyRoleNames(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"tool_roles", Config{Tools: []ToolRule{{Name: "report", Class: Read, Roles: []string{"analyst", ""}}}}, `tool "report"`},
		{"exempt_roles", Config{Tools: []ToolRule{{Name: "refund", Class: Write, ArgLimits: []ArgLimit{{Field: "amount", Max: 100, ExemptRoles: []string{""}}}}}}, `tool "refund"`},
		{"default_rule_roles", Config{Default: &ToolRule{Class: Read, Roles: []string{""}}}, "default rule"},
		{"role_rule", Config{RoleRules: []RoleRule{{Pattern: "admin_*", Roles: []string{"admin", ""}}}}, `role rule "admin_*"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "empty role") {
				t.Errorf("New(%+v) error = %v, want one naming %s and the empty role", tt.cfg, err, tt.want)
			}
		})
	}
	// What the mistake would have allowed.
	p, err := New(Config{Tools: []ToolRule{{Name: "refund", Class: Write, ArgLimits: []ArgLimit{{Field: "amount", Max: 100, ExemptRoles: []string{""}}}}}, WriteAllowlist: []string{"refund"}})
	if err == nil {
		lax := &Principal{Subject: "mallory", Roles: []string{"support", ""}}
		if d := p.Decide(lax, "refund", MapArgs{"amount": 1e6}); d.Allowed() {
			t.Errorf("a caller with an empty role passes an argument limit of 100 with amount 1e6")
		}
	}
}

// TestRequiredRolesIsACopy: a Policy is immutable; the role sets
// RequiredRoles returns must not be the policy's own, or a caller that
// edits them (to build an error message, say) changes who may call a tool.
func TestRequiredRolesIsACopy(t *testing.T) {
	p, err := New(Config{
		Tools:     []ToolRule{{Name: "admin_reset", Class: Read, Roles: []string{"ops"}}},
		RoleRules: []RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}, {Pattern: "admin_reset", Roles: []string{"security"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	viewer := &Principal{Subject: "bob", Roles: []string{"viewer"}}
	for _, set := range p.RequiredRoles("admin_reset") {
		for i := range set {
			set[i] = "viewer"
		}
	}
	if d := p.Decide(viewer, "admin_reset", nil); d.Allowed() {
		t.Errorf("after editing the result of RequiredRoles, a viewer may call admin_reset: the policy changed")
	}
}
