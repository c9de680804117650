package policy

import "testing"

// TestArgLimitExemptRolesNotShared: a Policy is compiled and immutable: a
// later change to the ExemptRoles slice of the caller's Config must not
// widen an exemption.
func TestArgLimitExemptRolesNotShared(t *testing.T) {
	exempt := []string{"supervisor"}
	cfg := Config{
		Tools: []ToolRule{{Name: "trigger_refund", Class: Write,
			ArgLimits: []ArgLimit{{Field: "amount", Max: 100, ExemptRoles: exempt}}}},
		WriteAllowlist: []string{"trigger_refund"},
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	support := &Principal{Subject: "sam", Roles: []string{"support"}}
	args := MapArgs{"amount": float64(5000)}
	if d := p.Decide(support, "trigger_refund", args); d.Allowed() {
		t.Fatalf("before: support refunding 5000 allowed, want Forbidden")
	}
	exempt[0] = "support" // the caller reuses its slice after New
	if d := p.Decide(support, "trigger_refund", args); d.Allowed() {
		t.Errorf("after mutating the caller's ExemptRoles, Decide(support, amount 5000) is allowed (code %d), want Forbidden: the policy is not immutable", d.Code)
	}
}
