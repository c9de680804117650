package policy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview24bDotAboveRoutesOnlyWiden: a combining dot above (U+0307)
// after an "I" reached by other routes than a plain "i" (a dotless ı, the
// "I" of a full folding such as "ﬁ", a default-ignorable character between
// them, the dot repeated, an NFD "İ") makes the name share the key of the
// name without the dot, and so gets the demands of both that name's rule
// and the default rule; never fewer. The exact name keeps its own rule,
// and a folded write needs both spellings on the allowlist.
func TestReview24bDotAboveRoutesOnlyWiden(t *testing.T) {
	for _, pair := range [][2]string{
		{"\u0131\u0307ptal", "iptal"},    // dotless i with a dot
		{"\ufb01\u0307x", "FIx"},         // the I of ﬁ's full folding
		{"i\u00ad\u0307ptal", "iptal"},   // a soft hyphen between
		{"i\u0307\u0307ptal", "iptal"},   // repeated
		{"\u0130\u0307ptal", "iptal"},    // İ and another dot
		{"I\u0307ptal", "\u0130ptal"},    // NFD İ
		{"\u1e2d\u0307", "\u1e2c\u0307"}, // another letter: still its own case pair
		{"x\u0307i", "X\u0307I"},         // a dot after another letter is kept
		{strings.Repeat("a", 300) + "I\u0307", strings.Repeat("A", 300) + "i"},
	} {
		if a, b := policy.NameKey(pair[0]), policy.NameKey(pair[1]); a != b {
			t.Errorf("NameKey(%+q) = %+q, NameKey(%+q) = %+q: want one key", pair[0], a, pair[1], b)
		}
	}
	if policy.NameKey("x\u0307") == policy.NameKey("x") {
		t.Error("a dot above after x is dropped")
	}
	p, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "iptal", Class: policy.Write, Roles: []string{"yonetici"}},
			{Name: "i\u0307ade", Class: policy.Read},
			{Name: "\u0130ade", Class: policy.Write, Roles: []string{"yonetici"}},
		},
		RoleRules: []policy.RoleRule{
			{Pattern: "\ufb01*", Roles: []string{"fi"}},
			{Pattern: "gI*", Roles: []string{"g"}},
		},
		WriteAllowlist: []string{"\u0130ade"},
		Default:        &policy.ToolRule{Class: policy.Read, Roles: []string{"viewer"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	all := &policy.Principal{Subject: "a", Roles: []string{"yonetici", "viewer", "fi", "g"}}
	// The folded write needs the rule's own spelling on the allowlist too.
	if d := p.Authorize(all, "\u0131\u0307ptal"); d.Code != policy.WriteNotAllowed {
		t.Errorf("ı̇ptal: %q, want WRITE_NOT_ALLOWED (iptal is not on the allowlist)", d.Code)
	}
	// Two rules fold alike now: another spelling has no rule at all.
	if d := p.Authorize(all, "I\u0307ADE"); d.Code != policy.NotFound {
		t.Errorf("I\u0307ADE: %q, want NotFound (two rules fold alike)", d.Code)
	}
	for name, want := range map[string][]string{
		"\ufb01\u0307le":    {"fi", "viewer"},
		"FI\u0307LE":        {"fi", "viewer"},
		"g\u0131\u0307_x":   {"g", "viewer"},
		"gi\u200b\u0307_x":  {"g", "viewer"},
		"\u0131\u0307ptal":  {"yonetici", "viewer"},
		"I\u0307\u0307PTAL": {"yonetici", "viewer"},
	} {
		rr := p.RequiredRoles(name)
		for _, role := range want {
			if !slices.ContainsFunc(rr, func(rs []string) bool { return slices.Contains(rs, role) }) {
				t.Errorf("RequiredRoles(%+q) = %v, want the role %s among them", name, rr, role)
			}
		}
	}
}
