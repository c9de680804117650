package policy_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestRulesApplyUnderCaseFolding: a name that equals a rule's name or
// pattern under Unicode simple case folding gets that rule, so that a
// server matching names leniently cannot be offered a protected tool
// under another spelling.
func TestRulesApplyUnderCaseFolding(t *testing.T) {
	for _, show := range []bool{false, true} {
		p, err := policy.New(policy.Config{
			Tools: []policy.ToolRule{
				{Name: "trigger_refund", Class: policy.Write, ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 100}}},
			},
			RoleRules: []policy.RoleRule{
				{Pattern: "admin_*", Roles: []string{"admin"}},
				{Pattern: "kill_switch", Roles: []string{"ops"}},
			},
			WriteAllowlist: []string{"trigger_refund"},
			Default:        &policy.ToolRule{Class: policy.Read},
			ShowForbidden:  show,
		})
		if err != nil {
			t.Fatal(err)
		}
		viewer := &policy.Principal{Subject: "v", Roles: []string{"viewer"}}
		admin := &policy.Principal{Subject: "a", Roles: []string{"admin", "ops"}}
		denied := policy.NotFound
		if show {
			denied = policy.Forbidden
		}
		for _, name := range []string{"admin_reset_key", "ADMIN_reset_key", "Admin_Reset_Key", "kill_switch", "KILL_SWITCH", "\u212aill_switch", "kill_\u017fwitch"} {
			if d := p.Authorize(viewer, name); d.Code != denied {
				t.Errorf("show=%v: viewer calls %q: %v, want %v", show, name, d.Code, denied)
			}
			if d := p.Authorize(admin, name); d.Code != policy.Allowed {
				t.Errorf("show=%v: admin calls %q: %v (%s), want allowed", show, name, d.Code, d.Reason)
			}
			if p.Visible(viewer, name) != show {
				t.Errorf("show=%v: %q visible to viewer", show, name)
			}
			if len(p.RequiredRoles(name)) != 1 {
				t.Errorf("RequiredRoles(%q) = %v, want one set", name, p.RequiredRoles(name))
			}
		}
		for _, name := range []string{"adminreset_key", "ａdmin_reset_key", "get_admin_x"} {
			if d := p.Authorize(viewer, name); d.Code != policy.Allowed {
				t.Errorf("viewer calls %q: %v, want allowed by the default rule", name, d.Code)
			}
		}
		// The tool rule comes with its class and limits; the allowlist
		// is exact, so the other spelling is not allowed to write.
		r, ok := p.Resolve("TRIGGER_REFUND")
		if !ok || r.Name != "trigger_refund" || r.Class != policy.Write {
			t.Fatalf("Resolve(TRIGGER_REFUND) = %+v, %v; want trigger_refund's rule", r, ok)
		}
		if d := p.Decide(admin, "Trigger_Refund", policy.MapArgs{"amount": json.Number("5")}); d.Code != policy.WriteNotAllowed {
			t.Errorf("Trigger_Refund: %v, want WriteNotAllowed (the allowlist names trigger_refund)", d.Code)
		}
		if d := p.CheckArgs(admin, r, policy.MapArgs{"amount": json.Number("500")}); d.Code == policy.Allowed {
			t.Errorf("TRIGGER_REFUND's amount limit did not apply")
		}
	}
}

// TestFoldAmbiguous: when two rules' names fold alike, a third spelling
// gets neither rule nor the default.
func TestFoldAmbiguous(t *testing.T) {
	p, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "Sync", Class: policy.Read},
			{Name: "sync", Class: policy.Write},
		},
		Default: &policy.ToolRule{Class: policy.Read},
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]policy.Class{"Sync": policy.Read, "sync": policy.Write} {
		if r, ok := p.Resolve(name); !ok || r.Class != want {
			t.Errorf("Resolve(%q) = %+v, %v", name, r, ok)
		}
	}
	if r, ok := p.Resolve("SYNC"); ok {
		t.Errorf("Resolve(SYNC) = %+v: two rules fold to it, want none", r)
	}
	if d := p.Authorize(nil, "SYNC"); d.Code != policy.NotFound {
		t.Errorf("Authorize(SYNC) = %v, want NotFound", d.Code)
	}
}

func TestFoldDoesNotAllocate(t *testing.T) {
	p, err := policy.New(policy.Config{
		RoleRules: []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}, {Pattern: "kill_switch", Roles: []string{"ops"}}},
		Default:   &policy.ToolRule{Class: policy.Read},
	})
	if err != nil {
		t.Fatal(err)
	}
	viewer := &policy.Principal{Subject: "v", Roles: []string{"viewer"}}
	name := "Get_Customer_Record_" + strings.Repeat("x", 30)
	if n := testing.AllocsPerRun(100, func() { p.Authorize(viewer, name) }); n != 0 {
		t.Errorf("Authorize allocates %v times, want 0", n)
	}
}

func TestCheckName(t *testing.T) {
	for name, bad := range map[string]bool{
		"admin_reset_key": false, "میخواهم\u200cبروم": false,
		" admin": true, "admin ": true, "admin\u200b_x": true, "a\u202eb": true, "a\x00": true, "\xff": true,
	} {
		if err := policy.CheckName(name); (err != nil) != bad {
			t.Errorf("CheckName(%q) = %v, want error: %v", name, err, bad)
		}
	}
}
