package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestArgLimitExactAtTheLimit: a number is compared with an argument
// limit by its exact decimal value, not by its nearest float64. A value
// just above Max that rounds to Max ("100.000000000000001", or 2^53+1 for
// a Max of 2^53) would otherwise pass, and a handler that decodes the
// argument exactly (an int64, a json.Number, a decimal) acts on more than
// the limit allows.
func TestArgLimitExactAtTheLimit(t *testing.T) {
	const big = 9007199254740992 // 2^53
	tests := []struct {
		name  string
		max   float64
		value any
		want  Code
	}{
		{"equal", 100, json.Number("100"), Allowed},
		{"equal_exponent", 100, json.Number("1e2"), Allowed},
		{"equal_trailing_zeros", 100, json.Number("100.000"), Allowed},
		{"equal_long_exponent", 100, json.Number("1000e-1"), Allowed},
		{"below_rounding_up_to_max", 100, json.Number("99.99999999999999999999"), Allowed},
		{"below", 100, json.Number("99.5"), Allowed},
		{"above", 100, json.Number("100.5"), Forbidden},
		{"above_rounding_down_to_max", 100, json.Number("100.000000000000001"), Forbidden},
		{"above_by_exponent", 100, json.Number("1.00000000000000001e2"), Forbidden},
		{"huge_int_equal", big, json.Number("9007199254740992"), Allowed},
		{"huge_int_above_rounding_down", big, json.Number("9007199254740993"), Forbidden},
		{"negative_zero_at_zero", 0, json.Number("-0"), Allowed},
		{"tiny_above_zero", 0, json.Number("1e-400"), Forbidden},
		{"tiny_below_zero", 0, json.Number("-1e-400"), Allowed},
		{"decimal_max_written_exactly", 0.1, json.Number("0.1"), Allowed},
		{"float64_value_equal", 100, 100.0, Allowed},
		{"overflow", 100, json.Number("1e400"), Forbidden},
		{"long_mantissa_equal", 100, json.Number("1" + strings.Repeat("0", 20000) + "e-19998"), Allowed},
		{"long_mantissa_above", 100, json.Number("100." + strings.Repeat("0", 20000) + "1"), Forbidden},
		{"huge_negative_exponent_above_zero", 0, json.Number("1e-99999999999999999999"), Forbidden},
		{"zero_huge_exponent", 0, json.Number("0e99999999999999999999"), Allowed},
		{"not_json_syntax_at_max", 100, json.Number("0x64"), Forbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(Config{
				Tools:          []ToolRule{{Name: "refund", Class: Write, ArgLimits: []ArgLimit{{Field: "amount", Max: tt.max}}}},
				WriteAllowlist: []string{"refund"},
			})
			if err != nil {
				t.Fatal(err)
			}
			pr := &Principal{Subject: "sam", Roles: []string{"support"}}
			d := p.Decide(pr, "refund", MapArgs{"amount": tt.value})
			if d.Code != tt.want {
				t.Errorf("Decide(amount %.40s, max %v) = %v (%s), want %v", fmt.Sprint(tt.value), tt.max, d.Code, d.Reason, tt.want)
			}
		})
	}

	// What a handler with an int64 argument receives for the value that
	// rounds to the limit.
	var in struct{ Amount int64 }
	if err := json.Unmarshal([]byte(`{"Amount":9007199254740993}`), &in); err != nil || in.Amount <= big {
		t.Fatalf("handler decode = %d, %v; the demonstration is void", in.Amount, err)
	}
}

// TestNewRefusesMistakenNames: names an operator got wrong are refused at
// New with a message naming them. A role rule whose pattern has a stray
// space or an invisible character matches no tool, so the tools it was
// meant to protect fall to their own rule or the Default rule without the
// role; an argument limit on a nested path ("payment.amount") reads a
// top-level argument of that literal name, which a caller can send itself
// next to the real one; a "*" anywhere but alone in the write allowlist, in
// a tool rule's name or as a role is not a wildcard, and a policy built on
// the belief that it is one does not do what its author meant.
func TestNewRefusesMistakenNames(t *testing.T) {
	tool := func(name string) Config {
		return Config{Tools: []ToolRule{{Name: name, Class: Read}}}
	}
	roleRule := func(pattern string) Config {
		return Config{RoleRules: []RoleRule{{Pattern: pattern, Roles: []string{"admin"}}}}
	}
	field := func(f string) Config {
		return Config{Tools: []ToolRule{{Name: "refund", Class: Write, ArgLimits: []ArgLimit{{Field: f, Max: 100}}}}}
	}
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"pattern_leading_space", roleRule(" admin_*"), `role rule " admin_*"`},
		{"pattern_trailing_space", roleRule("admin_reset "), `role rule "admin_reset "`},
		{"pattern_nbsp", roleRule("admin_\u00a0*"), `role rule "admin_\u00a0*"`},
		{"pattern_zero_width", roleRule("admin\u200b_*"), `role rule "admin\u200b_*"`},
		{"pattern_nul", roleRule("admin\x00_*"), `role rule "admin\x00_*"`},
		{"pattern_invalid_utf8", roleRule("admin\xff_*"), `role rule "admin\xff_*"`},
		{"tool_trailing_space", tool("search "), `tool "search "`},
		{"tool_newline", tool("search\n"), `tool "search\n"`},
		{"tool_star", tool("admin_*"), `tool "admin_*"`},
		{"tool_lone_star", tool("*"), `tool "*"`},
		{"allowlist_pattern", Config{WriteAllowlist: []string{"admin_*"}}, `write allowlist: "admin_*"`},
		{"allowlist_space", Config{WriteAllowlist: []string{" refund"}}, `write allowlist: " refund"`},
		{"field_dotted_path", field("payment.amount"), `"payment.amount"`},
		{"field_pointer", field("/amount"), `"/amount"`},
		{"field_index", field("items[0]"), `"items[0]"`},
		{"field_space", field(" amount"), `" amount"`},
		{"role_star_in_role_rule", Config{RoleRules: []RoleRule{{Pattern: "admin_*", Roles: []string{"*"}}}}, `role rule "admin_*"`},
		{"role_star_in_tool", Config{Tools: []ToolRule{{Name: "report", Class: Read, Roles: []string{"analyst", "*"}}}}, `tool "report"`},
		{"role_star_exempt", Config{Tools: []ToolRule{{Name: "refund", Class: Write, ArgLimits: []ArgLimit{{Field: "amount", Max: 1, ExemptRoles: []string{"*"}}}}}}, `tool "refund"`},
		{"role_space", Config{RoleRules: []RoleRule{{Pattern: "admin_*", Roles: []string{" admin"}}}}, `" admin"`},
		{"role_control", Config{Default: &ToolRule{Class: Read, Roles: []string{"ops\t"}}}, "default rule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New(%+v) error = %v, want one containing %s", tt.cfg, err, tt.want)
			}
		})
	}

	// What the stray space would have allowed, in a gateway's policy.
	p, err := New(Config{Default: &ToolRule{Class: Read}, RoleRules: []RoleRule{{Pattern: " admin_*", Roles: []string{"admin"}}}})
	if err == nil {
		viewer := &Principal{Subject: "bob", Roles: []string{"viewer"}}
		if p.Decide(viewer, "admin_reset_key", nil).Allowed() {
			t.Errorf("a viewer may call admin_reset_key under a role rule \" admin_*\"")
		}
	}
	// And the dotted field: the caller names the literal key itself.
	p, err = New(Config{
		Tools:          []ToolRule{{Name: "pay", Class: Write, ArgLimits: []ArgLimit{{Field: "payment.amount", Max: 100}}}},
		WriteAllowlist: []string{"pay"},
	})
	if err == nil {
		args := MapArgs{"payment.amount": 1.0, "payment": map[string]any{"amount": 1e6}}
		if p.Decide(&Principal{Subject: "bob"}, "pay", args).Allowed() {
			t.Errorf("a limit on payment.amount lets payment.amount 1e6 through")
		}
	}
}

// TestNewAcceptsOrdinaryNames: the checks above refuse mistakes, not the
// names tools and roles ordinarily have.
func TestNewAcceptsOrdinaryNames(t *testing.T) {
	_, err := New(Config{
		Tools: []ToolRule{
			{Name: "get-thing.v2", Class: Read, Roles: []string{"team:ops", "Analyst"}},
			{Name: "my tool", Class: Read},
			{Name: "café", Class: Read},
			{Name: "refund", Class: Write, ArgLimits: []ArgLimit{{Field: "amount_cents", Max: 100, ExemptRoles: []string{"finance"}}}},
		},
		RoleRules:      []RoleRule{{Pattern: "*", Roles: []string{"user"}}, {Pattern: "admin_*", Roles: []string{"admin"}}, {Pattern: "refund", Roles: []string{"support"}}},
		WriteAllowlist: []string{"*", "refund"},
		Default:        &ToolRule{Class: Read},
	})
	if err != nil {
		t.Errorf("New(ordinary names) = %v, want nil", err)
	}
}

// TestNewAcceptsScopeRoles: a "*" within a role name is a name like any
// other (scopes become roles: "api:*"), and it grants exactly that role.
func TestNewAcceptsScopeRoles(t *testing.T) {
	p, err := New(Config{Tools: []ToolRule{{Name: "report", Class: Read, Roles: []string{"api:*"}}}})
	if err != nil {
		t.Fatalf("New with role \"api:*\": %v", err)
	}
	if d := p.Authorize(&Principal{Subject: "s", Roles: []string{"api:*"}}, "report"); !d.Allowed() {
		t.Errorf("a caller with role \"api:*\": %v, want allowed", d)
	}
	if d := p.Authorize(&Principal{Subject: "s", Roles: []string{"api:read"}}, "report"); d.Allowed() {
		t.Errorf("a caller with role \"api:read\" is allowed by a rule naming \"api:*\": roles are not patterns")
	}
}
