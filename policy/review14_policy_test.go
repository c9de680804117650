package policy_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/mcpguard/mcpguard/policy"
)

// TestFoldBeyondSimpleFolding: a downstream that matches names leniently
// does not stop at Unicode simple case folding. Go's strings.ToLower maps
// "İ" to "i" and strings.ToUpper "ı" to "I"; Python's upper and casefold
// and JavaScript's toUpperCase map "ß" to "SS"/"ss" and "ﬁ" to "FI"/"fi";
// NFKC case folding drops default-ignorable characters (a variation
// selector, the combining grapheme joiner). Each such spelling of a
// protected name must get the protection.
func TestFoldBeyondSimpleFolding(t *testing.T) {
	p, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{{Name: "file_purge", Class: policy.Read, Roles: []string{"ops"}}},
		RoleRules: []policy.RoleRule{
			{Pattern: "admin_*", Roles: []string{"admin"}},
			{Pattern: "reset_password", Roles: []string{"admin"}},
		},
		Default: &policy.ToolRule{Class: policy.Read},
	})
	if err != nil {
		t.Fatal(err)
	}
	viewer := &policy.Principal{Subject: "v", Roles: []string{"viewer"}}
	for _, name := range []string{
		"adm\u0130n_reset_key",    // Go strings.ToLower: admin_reset_key
		"ADM\u0131N_RESET_KEY",    // strings.ToUpper, str.upper, toUpperCase: ADMIN_RESET_KEY
		"reset_pa\u00dfword",      // str.casefold: reset_password
		"reset_pa\u1e9eword",      // capital sharp s
		"\ufb01le_purge",          // the fi ligature: str.casefold file_purge
		"admin\ufe0f_reset_key",   // a variation selector, dropped by NFKC_Casefold
		"admin\u034f_reset_key",   // the combining grapheme joiner, likewise
		"ad\u00admin_reset_key",   // a soft hyphen (a format character)
		"RESET_PA\u00dfWORD",      // mixed
		"admin_\u212aey_\u017fet", // simple folding still applies
	} {
		if d := p.Authorize(viewer, name); d.Code != policy.NotFound {
			t.Errorf("viewer calls %+q: %q, want NotFound (a protected tool under another spelling)", name, d.Code)
		}
		if p.Visible(viewer, name) {
			t.Errorf("%+q visible to viewer", name)
		}
		if rr := p.RequiredRoles(name); len(rr) == 0 {
			t.Errorf("RequiredRoles(%+q) = %v, want a role set", name, rr)
		}
	}
	for _, name := range []string{"adminreset", "resetpassword", "file-purge", "r\u00e9set_password"} {
		if d := p.Authorize(viewer, name); d.Code != policy.Allowed {
			t.Errorf("viewer calls %+q: %q, want allowed by the default rule", name, d.Code)
		}
	}
}

// TestFoldMatchesCaseMappings checks the folding against every case mapping
// of Go's unicode package and the full mappings of Unicode's SpecialCasing
// and CaseFolding (as Python and JavaScript apply them): a rule for one
// spelling applies to the other, both ways.
func TestFoldMatchesCaseMappings(t *testing.T) {
	type pair struct{ a, b string }
	var pairs []pair
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		for _, m := range []rune{unicode.ToLower(r), unicode.ToUpper(r), unicode.ToTitle(r)} {
			if m != r {
				pairs = append(pairs, pair{string(r), string(m)})
			}
		}
	}
	for full, maps := range map[string][]string{
		"\u00df": {"ss", "SS", "Ss"}, "\u1e9e": {"ss", "SS"},
		"\ufb00": {"ff", "FF"}, "\ufb01": {"fi", "FI", "Fi"}, "\ufb02": {"fl", "FL"},
		"\ufb03": {"ffi", "FFI"}, "\ufb04": {"ffl", "FFL"}, "\ufb05": {"st", "ST"}, "\ufb06": {"st", "ST"},
		"\u0149": {"\u02bcn", "\u02bcN"}, "\u01f0": {"j\u030c", "J\u030c"},
		"\u1fb3": {"\u03b1\u03b9", "\u0391\u0399", "\u1fbc"},
		"\u0390": {"\u03b9\u0308\u0301", "\u0399\u0308\u0301"},
		"\u0587": {"\u0565\u0582", "\u0535\u0552"},
		"\u0130": {"i", "I"}, "\u0131": {"I", "i"},
	} {
		for _, m := range maps {
			pairs = append(pairs, pair{full, m})
		}
	}
	names := map[string]bool{}
	for _, p := range pairs {
		names[p.a], names[p.b] = true, true
	}
	role := func(s string) string { return fmt.Sprintf("r%x", s) }
	var cfg policy.Config
	for n := range names {
		cfg.RoleRules = append(cfg.RoleRules, policy.RoleRule{Pattern: "t_" + n, Roles: []string{role(n)}})
	}
	p, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for _, pr := range pairs {
		for _, x := range [][2]string{{pr.a, pr.b}, {pr.b, pr.a}} {
			got := p.RequiredRoles("t_" + x[0])
			if !slices.ContainsFunc(got, func(rs []string) bool { return slices.Contains(rs, role(x[1])) }) {
				if bad++; bad <= 20 {
					t.Errorf("the rule for %+q does not apply to %+q (RequiredRoles %v)", "t_"+x[1], "t_"+x[0], got)
				}
			}
		}
	}
	if bad > 20 {
		t.Errorf("... %d in all", bad)
	}
}

// TestFoldedRuleNotLooserThanDefault: a name that equals a tool rule's name
// only under folding is that tool at a downstream that matches names
// leniently, and another tool (one the default rule governs) at one that
// does not, as the go-sdk does; the guard cannot tell which. It must get
// no less than both rules demand: a folded spelling must never open what
// the default rule closes.
func TestFoldedRuleNotLooserThanDefault(t *testing.T) {
	viewer := &policy.Principal{Subject: "v", Roles: []string{"viewer"}}
	admin := &policy.Principal{Subject: "a", Roles: []string{"admin"}}
	open := policy.ToolRule{Name: "status", Class: policy.Read}

	t.Run("default_write", func(t *testing.T) {
		p, err := policy.New(policy.Config{Tools: []policy.ToolRule{open}, Default: &policy.ToolRule{Class: policy.Write}})
		if err != nil {
			t.Fatal(err)
		}
		if d := p.Authorize(viewer, "status"); d.Code != policy.Allowed {
			t.Fatalf("status: %v", d.Code)
		}
		if d := p.Authorize(viewer, "STATUS"); d.Code != policy.WriteNotAllowed {
			t.Errorf("STATUS: %q, want WriteNotAllowed (unknown tools are writes)", d.Code)
		}
		if err := p.CheckTool("Status", new(bool)); err != nil {
			t.Errorf("CheckTool(Status, ReadOnlyHint=false) = %v, want nil: the default rule makes it a write", err)
		}
	})
	t.Run("default_roles", func(t *testing.T) {
		p, err := policy.New(policy.Config{Tools: []policy.ToolRule{open}, Default: &policy.ToolRule{Class: policy.Read, Roles: []string{"admin"}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"Status", "STATUS", "\u017ftatus"} {
			if d := p.Authorize(viewer, name); d.Code != policy.NotFound {
				t.Errorf("viewer calls %q: %q, want NotFound (the default rule demands admin)", name, d.Code)
			}
			if p.Visible(viewer, name) {
				t.Errorf("%q visible to viewer", name)
			}
			if d := p.Authorize(admin, name); d.Code != policy.Allowed {
				t.Errorf("admin calls %q: %q, want allowed", name, d.Code)
			}
			if rr := p.RequiredRoles(name); !slices.ContainsFunc(rr, func(r []string) bool { return slices.Equal(r, []string{"admin"}) }) {
				t.Errorf("RequiredRoles(%q) = %v, want [admin] among them", name, rr)
			}
		}
	})
	t.Run("default_limits_cost_confirm", func(t *testing.T) {
		p, err := policy.New(policy.Config{
			Tools:   []policy.ToolRule{{Name: "pay", Class: policy.Read, Cost: 1}},
			Default: &policy.ToolRule{Class: policy.Read, Cost: 5, Confirm: true, ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 10}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if d := p.Decide(viewer, "PAY", policy.MapArgs{"amount": json.Number("50")}); d.Code != policy.Forbidden {
			t.Errorf("PAY amount 50: %q, want Forbidden by the default rule's limit", d.Code)
		}
		r, ok := p.Resolve("Pay")
		if !ok || r.Cost != 5 || !r.Confirm {
			t.Errorf("Resolve(Pay) = %+v, %v; want the default's cost 5 and confirmation", r, ok)
		}
		if r, _ := p.Resolve("pay"); r.Cost != 1 || r.Confirm || len(r.ArgLimits) != 0 {
			t.Errorf("Resolve(pay) = %+v: its own rule changed", r)
		}
	})
	t.Run("no_default", func(t *testing.T) {
		p, err := policy.New(policy.Config{Tools: []policy.ToolRule{open}})
		if err != nil {
			t.Fatal(err)
		}
		if d := p.Authorize(admin, "STATUS"); d.Code != policy.NotFound {
			t.Errorf("STATUS without a default rule: %q, want NotFound (it has no rule)", d.Code)
		}
		if err := p.CheckTool("Status", nil); err == nil || !strings.Contains(err.Error(), "status") {
			t.Errorf("CheckTool(Status) = %v, want an error naming the rule it folds onto", err)
		}
	})
}

// TestAuthorizeDoesNotAllocateLongNames: Authorize allocates nothing for a
// name of up to 64 bytes whatever its characters (a full folding may make
// it three times as long), nor for any longer one.
func TestAuthorizeDoesNotAllocateLongNames(t *testing.T) {
	p, err := policy.New(policy.Config{
		Tools:     []policy.ToolRule{{Name: "straße_report", Class: policy.Read}},
		RoleRules: []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}, {Pattern: "kill_switch", Roles: []string{"ops"}}},
		Default:   &policy.ToolRule{Class: policy.Read},
	})
	if err != nil {
		t.Fatal(err)
	}
	viewer := &policy.Principal{Subject: "v", Roles: []string{"viewer"}}
	for _, name := range []string{
		strings.Repeat("\u0390", 32),
		strings.Repeat("\u00df", 32),
		strings.Repeat("\ufb03", 21),
		"get_" + strings.Repeat("x", 300),
		"admin_" + strings.Repeat("\u0390", 5000),
		strings.Repeat("\ufe0f", 5000) + "kill_switch",
	} {
		if n := testing.AllocsPerRun(50, func() { p.Authorize(viewer, name) }); n != 0 {
			t.Errorf("Authorize(%d bytes, %+q...) allocates %v times, want 0", len(name), name[:min(len(name), 12)], n)
		}
	}
	if d := p.Authorize(viewer, strings.Repeat("\ufe0f", 5000)+"kill_switch"); d.Code != policy.NotFound {
		t.Errorf("kill_switch after 5000 ignorable characters: %q, want NotFound", d.Code)
	}
}
