package policy_test

import (
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview29ZeroPolicy pins the Policy doc: "The zero Policy has no
// rules: every tool is unknown to it." Every method answers so, without
// panicking.
func TestReview29ZeroPolicy(t *testing.T) {
	var p policy.Policy
	pr := &policy.Principal{Subject: "alice", Roles: []string{"admin"}}
	for _, tool := range []string{"search", "", "ADMIN_x"} {
		if r, ok := p.Resolve(tool); ok || r != nil {
			t.Errorf("Resolve(%q) = %v, %v; want nil, false", tool, r, ok)
		}
		if p.Visible(pr, tool) {
			t.Errorf("Visible(%q) = true", tool)
		}
		if d := p.Decide(pr, tool, nil); d.Code != policy.NotFound || d.Rule != nil {
			t.Errorf("Decide(%q) = %+v; want NotFound", tool, d)
		}
		if p.WriteAllowed(tool) {
			t.Errorf("WriteAllowed(%q) = true", tool)
		}
		if p.HasArgLimits(tool) {
			t.Errorf("HasArgLimits(%q) = true", tool)
		}
		if rr := p.RequiredRoles(tool); rr != nil {
			t.Errorf("RequiredRoles(%q) = %v", tool, rr)
		}
		if err := p.CheckTool(tool, nil); err == nil {
			t.Errorf("CheckTool(%q): nil error", tool)
		}
	}
	if n := p.Tools(); len(n) != 0 {
		t.Errorf("Tools() = %v", n)
	}
}

// TestReview29Strings pins the documented strings of Class and Code, and
// HasRole on a nil Principal.
func TestReview29Strings(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{policy.Read.String(), "read"},
		{policy.Write.String(), "write"},
		{policy.Class(0).String(), "unknown"},
		{policy.Class(9).String(), "unknown"},
		{policy.Allowed.String(), ""},
		{policy.NotFound.String(), "TOOL_NOT_FOUND"},
		{policy.Forbidden.String(), "FORBIDDEN"},
		{policy.WriteNotAllowed.String(), "WRITE_NOT_ALLOWED"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	var pr *policy.Principal
	if pr.HasRole("") || pr.HasRole("admin") {
		t.Error("a nil Principal has a role")
	}
}

// TestReview29CheckArgsNilRule pins CheckArgs' doc: "A nil r (the rule of a
// NotFound decision) refuses the call with NotFound", and Decide's: "when
// some [limits] apply and args is nil, the call is refused (fail closed)".
func TestReview29CheckArgsNilRule(t *testing.T) {
	p, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{{Name: "refund", Class: policy.Read,
			ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 100, ExemptRoles: []string{"finance"}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := p.CheckArgs(nil, nil, policy.MapArgs{}); d.Code != policy.NotFound {
		t.Errorf("CheckArgs with a nil rule = %+v, want NotFound", d)
	}
	if d := p.Decide(&policy.Principal{Subject: "a"}, "refund", nil); d.Code != policy.Forbidden {
		t.Errorf("Decide with nil args under a limit = %+v, want Forbidden", d)
	}
	if d := p.Decide(&policy.Principal{Subject: "a", Roles: []string{"finance"}}, "refund", nil); d.Code != policy.Allowed {
		t.Errorf("Decide with nil args for an exempt caller = %+v, want Allowed", d)
	}
}
