package policy_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview24DottedCapitalIAsPythonLowersIt: Python's lower and casefold
// and JavaScript's toLowerCase map the Turkish dotted capital "İ" to two
// characters, "i" and a combining dot above (U+0307), where Go's
// strings.ToLower gives a plain "i". A downstream in Python or JavaScript
// that lower-cases names runs the tool "İptal_siparis" when called as
// "i\u0307ptal_siparis", or "I\u0307PTAL_SIPARIS": that spelling must get
// the tool's rule, not the default rule's (nor the other way round).
func TestReview24DottedCapitalIAsPythonLowersIt(t *testing.T) {
	p, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "\u0130ptal_siparis", Class: policy.Write, Roles: []string{"yonetici"}},
			{Name: "i\u0307ade_et", Class: policy.Write, Roles: []string{"yonetici"}},
		},
		RoleRules: []policy.RoleRule{{Pattern: "y\u00f6net\u0130c\u0130_*", Roles: []string{"yonetici"}}},
		Default:   &policy.ToolRule{Class: policy.Read},
	})
	if err != nil {
		t.Fatal(err)
	}
	viewer := &policy.Principal{Subject: "v", Roles: []string{"viewer"}}
	for _, name := range []string{
		"i\u0307ptal_siparis",           // Python lower, casefold; JavaScript toLowerCase
		"I\u0307PTAL_SIPARIS",           // upper-cased again: Python, JavaScript, Go
		"\u0130ade_et",                  // the rule's spelling upper-cased by Go
		"\u0130ADE_ET",                  // likewise
		"y\u00f6neti\u0307ci\u0307_sil", // the pattern lower-cased by Python
	} {
		if d := p.Authorize(viewer, name); d.Code != policy.NotFound {
			t.Errorf("viewer calls %+q: %q, want NotFound (a protected tool under another spelling)", name, d.Code)
		}
		if p.Visible(viewer, name) {
			t.Errorf("%+q visible to viewer", name)
		}
		if rr := p.RequiredRoles(name); !slices.ContainsFunc(rr, func(rs []string) bool { return slices.Contains(rs, "yonetici") }) {
			t.Errorf("RequiredRoles(%+q) = %v, want the role yonetici", name, rr)
		}
	}
	if a, b := policy.NameKey("\u0130"), policy.NameKey("i\u0307"); a != b {
		t.Errorf("NameKey(%+q) = %+q, NameKey(%+q) = %+q: want one key", "\u0130", a, "i\u0307", b)
	}
}

// TestReview24CasePairsAfterUnicode15: Go's unicode tables are Unicode
// 15.0, and lack the case pairs that Unicode 16 and 17 added, which
// JavaScript on a current ICU (Node with ICU 78: Unicode 17) and Python
// 3.14 (Unicode 16) already apply: "ɤ" upper-cases
// to "Ɤ" (U+A7CB) there, the Garay and Beria Erfe scripts have case. A rule
// for one spelling must apply to the other, both ways.
func TestReview24CasePairsAfterUnicode15(t *testing.T) {
	pairs := [][2]rune{
		{0x019B, 0xA7DC}, {0x0264, 0xA7CB}, {0x1C89, 0x1C8A},
		{0xA7CC, 0xA7CD}, {0xA7CE, 0xA7CF}, {0xA7D2, 0xA7D3}, {0xA7D4, 0xA7D5}, {0xA7DA, 0xA7DB},
	}
	for r := rune(0x10D50); r <= 0x10D65; r++ { // Garay
		pairs = append(pairs, [2]rune{r, r + 0x20})
	}
	for r := rune(0x16EA0); r <= 0x16EB8; r++ { // Beria Erfe
		pairs = append(pairs, [2]rune{r, r + 0x1B})
	}
	role := func(r rune) string { return fmt.Sprintf("r%x", r) }
	var cfg policy.Config
	for _, pr := range pairs {
		for _, r := range pr {
			cfg.RoleRules = append(cfg.RoleRules, policy.RoleRule{Pattern: "t_" + string(r), Roles: []string{role(r)}})
		}
	}
	p, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range pairs {
		for _, x := range [][2]rune{pr, {pr[1], pr[0]}} {
			got := p.RequiredRoles("t_" + string(x[0]))
			if !slices.ContainsFunc(got, func(rs []string) bool { return slices.Contains(rs, role(x[1])) }) {
				t.Errorf("the rule for %+q does not apply to %+q (RequiredRoles %v)", "t_"+string(x[1]), "t_"+string(x[0]), got)
			}
		}
	}
}
