package policy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func shopPolicy(t *testing.T, showForbidden bool) *Policy {
	t.Helper()
	p, err := New(Config{
		Tools: []ToolRule{
			{Name: "search", Class: Read},
			{Name: "add_to_cart", Class: Write, Cost: 1},
			{Name: "admin_reset_key", Class: Write, Confirm: true},
			{Name: "admin_list_audit_log", Class: Read},
			{Name: "trigger_refund", Class: Write, ArgLimits: []ArgLimit{{Field: "amount", Max: 100, ExemptRoles: []string{"finance"}}}},
			{Name: "report", Class: Read, Roles: []string{"analyst", "admin"}},
		},
		RoleRules:      []RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		WriteAllowlist: []string{"add_to_cart", "admin_reset_key", "trigger_refund"},
		ShowForbidden:  showForbidden,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDecide(t *testing.T) {
	viewer := &Principal{Subject: "bob", Roles: []string{"viewer"}}
	admin := &Principal{Subject: "alice", Roles: []string{"viewer", "admin"}}
	finance := &Principal{Subject: "fin", Roles: []string{"finance"}}
	tests := []struct {
		name string
		show bool
		pr   *Principal
		tool string
		args Args
		want Code
	}{
		{"read_allowed", false, viewer, "search", nil, Allowed},
		{"unknown_tool", false, viewer, "nope", nil, NotFound},
		{"admin_tool_hidden_from_viewer", false, viewer, "admin_reset_key", nil, NotFound},
		{"admin_tool_forbidden_when_shown", true, viewer, "admin_reset_key", nil, Forbidden},
		{"admin_tool_allowed_for_admin", false, admin, "admin_reset_key", nil, Allowed},
		{"prefix_rule_applies_to_read", false, viewer, "admin_list_audit_log", nil, NotFound},
		{"tool_roles_any_of", false, &Principal{Subject: "a", Roles: []string{"analyst"}}, "report", nil, Allowed},
		{"tool_roles_missing", true, viewer, "report", nil, Forbidden},
		{"nil_principal_gets_nothing_role_gated", true, nil, "report", nil, Forbidden},
		{"arg_limit_within", false, viewer, "trigger_refund", MapArgs{"amount": 50.0}, Allowed},
		{"arg_limit_exceeded", false, viewer, "trigger_refund", MapArgs{"amount": 500.0}, Forbidden},
		{"arg_limit_exempt_role", false, finance, "trigger_refund", MapArgs{"amount": 500.0}, Allowed},
		{"arg_limit_not_a_number", false, viewer, "trigger_refund", MapArgs{"amount": "500"}, Forbidden},
		{"arg_limit_missing_args", false, viewer, "trigger_refund", nil, Forbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := shopPolicy(t, tt.show)
			got := p.Decide(tt.pr, tt.tool, tt.args)
			if got.Code != tt.want {
				t.Errorf("Decide(%v, %q) = %v (%s), want %v", tt.pr, tt.tool, got.Code, got.Reason, tt.want)
			}
		})
	}
}

func TestWritesOffByDefault(t *testing.T) {
	p, err := New(Config{Tools: []ToolRule{{Name: "delete", Class: Write}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Decide(&Principal{Subject: "x"}, "delete", nil).Code; got != WriteNotAllowed {
		t.Errorf("Decide(delete) = %v, want WriteNotAllowed", got)
	}
	p, err = New(Config{Tools: []ToolRule{{Name: "delete", Class: Write}}, WriteAllowlist: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Decide(&Principal{Subject: "x"}, "delete", nil).Code; got != Allowed {
		t.Errorf("Decide(delete) with * allowlist = %v, want Allowed", got)
	}
}

func TestVisible(t *testing.T) {
	p := shopPolicy(t, false)
	viewer := &Principal{Subject: "bob", Roles: []string{"viewer"}}
	var got []string
	for _, n := range []string{"search", "add_to_cart", "admin_reset_key", "admin_list_audit_log", "report", "unknown"} {
		if p.Visible(viewer, n) {
			got = append(got, n)
		}
	}
	want := []string{"search", "add_to_cart"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("visible tools (-want +got):\n%s", diff)
	}
}

func TestDefaultRule(t *testing.T) {
	p, err := New(Config{Default: &ToolRule{Class: Read}, RoleRules: []RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}}, ShowForbidden: true})
	if err != nil {
		t.Fatal(err)
	}
	viewer := &Principal{Subject: "bob", Roles: []string{"viewer"}}
	if got := p.Decide(viewer, "anything", nil).Code; got != Allowed {
		t.Errorf("Decide(anything) = %v, want Allowed", got)
	}
	if got := p.Decide(viewer, "admin_reset_key", nil).Code; got != Forbidden {
		t.Errorf("Decide(admin_reset_key) = %v, want Forbidden", got)
	}
	if diff := cmp.Diff([][]string{{"admin"}}, p.RequiredRoles("admin_x")); diff != "" {
		t.Errorf("RequiredRoles (-want +got):\n%s", diff)
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"empty_name", Config{Tools: []ToolRule{{Class: Read}}}, "empty name"},
		{"no_class", Config{Tools: []ToolRule{{Name: "a"}}}, "class must be"},
		{"duplicate", Config{Tools: []ToolRule{{Name: "a", Class: Read}, {Name: "a", Class: Read}}}, "duplicate"},
		{"negative_cost", Config{Tools: []ToolRule{{Name: "a", Class: Read, Cost: -1}}}, "non-negative"},
		{"role_rule_no_roles", Config{RoleRules: []RoleRule{{Pattern: "a_*"}}}, "no roles"},
		{"bad_pattern", Config{RoleRules: []RoleRule{{Pattern: "a*b", Roles: []string{"x"}}}}, "trailing"},
		{"empty_allowlist_name", Config{WriteAllowlist: []string{""}}, "allowlist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New(%+v) error = %v, want containing %q", tt.cfg, err, tt.want)
			}
		})
	}
}

func TestCheckTool(t *testing.T) {
	p := shopPolicy(t, false)
	yes, no := true, false
	tests := []struct {
		name    string
		tool    string
		hint    *bool
		wantErr bool
	}{
		{"read_no_hint", "search", nil, false},
		{"read_hint_true", "search", &yes, false},
		{"read_hint_false", "search", &no, true},
		{"write_hint_true", "add_to_cart", &yes, true},
		{"write_hint_false", "add_to_cart", &no, false},
		{"no_rule", "unknown", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := p.CheckTool(tt.tool, tt.hint)
			if (err != nil) != tt.wantErr {
				t.Errorf("CheckTool(%q) = %v, wantErr %v", tt.tool, err, tt.wantErr)
			}
		})
	}
}

func TestDecideAllowedDoesNotAllocate(t *testing.T) {
	p := shopPolicy(t, false)
	pr := &Principal{Subject: "alice", Roles: []string{"viewer", "admin"}}
	allocs := testing.AllocsPerRun(100, func() {
		if !p.Decide(pr, "admin_reset_key", nil).Allowed() {
			t.Fatal("denied")
		}
	})
	if allocs != 0 {
		t.Errorf("Decide allocates %v times per call, want 0", allocs)
	}
}

func BenchmarkDecide(b *testing.B) {
	p, _ := New(Config{
		Tools:          []ToolRule{{Name: "admin_reset_key", Class: Write}},
		RoleRules:      []RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		WriteAllowlist: []string{"admin_reset_key"},
	})
	pr := &Principal{Subject: "alice", Roles: []string{"viewer", "admin"}}
	for b.Loop() {
		p.Decide(pr, "admin_reset_key", nil)
	}
}

// TestMapArgsCaseVariants checks that a field another key equals but for
// letter case is unreadable: encoding/json gives a handler's field the
// value of either key.
func TestMapArgsCaseVariants(t *testing.T) {
	for _, tc := range []struct {
		args MapArgs
		want bool
	}{
		{MapArgs{"seats": 1.0}, true},
		{MapArgs{"seats": 1.0, "Seats": 500.0}, false},
		{MapArgs{"seats": 1.0, "\u017feats": 500.0}, false},
		{MapArgs{"Seats": 500.0}, false},
		{MapArgs{"seats": 1.0, "other": 2.0}, true},
	} {
		if _, ok := tc.args.Number("seats"); ok != tc.want {
			t.Errorf("%v: Number(\"seats\") ok = %v, want %v", tc.args, ok, tc.want)
		}
	}
}
