package policy_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestParseConfigSyntaxErrorPosition pins the line and column ParseConfig
// gives for a syntax error where the existing cases do not reach: a bad
// byte that begins a line (the newline just before it is not on its line),
// and a document cut short, whose error is at its last byte.
func TestParseConfigSyntaxErrorPosition(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"bad_byte_first_on_line", "{\n\"tools\":[]\n]", "policy: config: not JSON: line 3, column 1: invalid character ']'"},
		{"bad_byte_after_newline_in_member", "{\"tools\":[],\n}", "policy: config: not JSON: line 2, column 1: invalid character '}'"},
		{"truncated", `{"tools": [`, "policy: config: not JSON: line 1, column 11: unexpected end of JSON input"},
		{"truncated_second_line", "{\n  \"tools\": [", "policy: config: not JSON: line 2, column 12: unexpected end of JSON input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policy.ParseConfig([]byte(tc.doc))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("ParseConfig(%q) = %v, want an error beginning %q", tc.doc, err, tc.want)
			}
		})
	}
}

// TestParseConfigUnknownMemberPath pins how ParseConfig's error names an
// unknown member: a plain word (letters, digits, '_', '-', '$', up to 64
// bytes) as .name, anything else (an empty name, white space, a longer
// name) quoted in brackets, and a name over 64 bytes cut, so that a
// stray member is recognisable and the message stays short.
func TestParseConfigUnknownMemberPath(t *testing.T) {
	long64 := strings.Repeat("a", 64)
	long65 := strings.Repeat("b", 65)
	odd64 := " " + strings.Repeat("c", 63)
	tool := func(member string) string {
		return `{"tools":[{"name":"t","class":"read",` + member + `:1}]}`
	}
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"plain_word_every_kind", tool(`"aAzZ09_-$"`), "policy: config: tools[0].aAzZ09_-$: unknown member"},
		{"plain_top", `{"zone9":1}`, "policy: config: zone9: unknown member"},
		{"empty_top", `{"":1}`, `policy: config: [""]: unknown member`},
		{"empty_nested", tool(`""`), `policy: config: tools[0][""]: unknown member`},
		{"leading_space", `{" tools":[]}`, `policy: config: [" tools"]: unknown member`},
		{"inner_space", tool(`"arg limits"`), `policy: config: tools[0]["arg limits"]: unknown member`},
		{"64_bytes_plain", `{"` + long64 + `":1}`, "policy: config: " + long64 + ": unknown member"},
		{"64_bytes_quoted_whole", `{"` + odd64 + `":1}`, `policy: config: ["` + odd64 + `"]: unknown member`},
		{"65_bytes_cut", `{"` + long65 + `":1}`, `policy: config: ["` + long65[:64] + `"...]: unknown member`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policy.ParseConfig([]byte(tc.doc))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("ParseConfig(%s) = %v, want an error beginning %q", tc.doc, err, tc.want)
			}
		})
	}
}

// TestParseConfigHalfSurrogateEscapes pins which \u escapes ParseConfig
// refuses as half a surrogate pair (encoding/json would read U+FFFD, and a
// name would then match no tool): a low surrogate not just after a high
// one, and a high surrogate not just followed by an escaped low one,
// wherever they stand among other escapes. A pair, any other code point,
// and an escaped backslash followed by "ud800" are read as written.
func TestParseConfigHalfSurrogateEscapes(t *testing.T) {
	doc := func(s string) string { return `{"write_allowlist":["` + s + `"]}` }
	for _, tc := range []struct {
		name, s string
	}{
		{"high_then_char", `a\ud800x`},
		{"high_then_other_escape", `a\ud800\n`},
		{"high_then_escaped_backslash_and_hex", `a\ud800\\dc00`},
		{"high_then_char_and_hex", `a\ud800xudc00`},
		{"high_then_non_surrogate_escape", `a\ud800\u0041`},
		{"high_then_high", `a\ud800\ud800`},
		{"high_then_above_low_range", `a\ud800\ue000`},
		{"high_then_below_low_range", `a\ud800\udbff`},
		{"last_high_alone", `a\udbffb`},
		{"last_low_alone", `a\udfffb`},
		{"pair_then_low", `a\ud83d\ude00\udc00`},
		{"escape_then_low", `a\u0041\udc00`},
		{"short_escape_then_low", `a\n\udc00`},
		{"escaped_quote_then_low", `a\"\udc00`},
	} {
		t.Run("refused_"+tc.name, func(t *testing.T) {
			_, err := policy.ParseConfig([]byte(doc(tc.s)))
			if err == nil || !strings.Contains(err.Error(), "write_allowlist[0]: a \\u escape of half a surrogate pair") {
				t.Errorf("ParseConfig(%s) = %v, want a half surrogate pair error", doc(tc.s), err)
			}
		})
	}
	for _, tc := range []struct {
		name, s, want string
	}{
		{"first_pair", `a\ud800\udc00`, "a\U00010000"},
		{"last_pair", `a\udbff\udfff`, "a\U0010ffff"},
		{"below_high_range", `a\ud7ff`, "a\ud7ff"},
		{"above_low_range", `a\ue000`, "a\ue000"},
		{"escaped_backslash", `a\\ud800`, `a\ud800`},
		{"pair_after_escapes", `a\n\u0041\ud83d\ude00`, "a\nA\U0001f600"},
	} {
		t.Run("accepted_"+tc.name, func(t *testing.T) {
			cfg, err := policy.ParseConfig([]byte(doc(tc.s)))
			if err != nil || len(cfg.WriteAllowlist) != 1 || cfg.WriteAllowlist[0] != tc.want {
				t.Errorf("ParseConfig(%s) = %q, %v; want [%q], nil", doc(tc.s), cfg.WriteAllowlist, err, tc.want)
			}
		})
	}
}

// TestNewRefusesRulesThatCannotApply pins refusals of New that no other
// test reaches: an argument limit on an empty field or with a NaN Max (no
// number is above NaN, so the limit would pass every value), a role rule
// whose pattern is empty or has a "*" before its trailing one, and a role
// rule naming no tool rule when the policy has exactly one tool rule and
// no default rule. Each is refused with an error naming the rule, not
// compiled into a policy that silently protects less.
func TestNewRefusesRulesThatCannotApply(t *testing.T) {
	limit := func(l policy.ArgLimit) policy.Config {
		return policy.Config{Tools: []policy.ToolRule{{Name: "refund", Class: policy.Read, ArgLimits: []policy.ArgLimit{l}}}}
	}
	roleRule := func(pattern string) policy.Config {
		return policy.Config{
			Tools:     []policy.ToolRule{{Name: "refund", Class: policy.Read}},
			RoleRules: []policy.RoleRule{{Pattern: pattern, Roles: []string{"admin"}}},
		}
	}
	for _, tc := range []struct {
		name string
		cfg  policy.Config
		want string
	}{
		{"arg_limit_empty_field", limit(policy.ArgLimit{Max: 1}), `policy: tool "refund": argument limit with empty field`},
		{"arg_limit_nan_max", limit(policy.ArgLimit{Field: "amount", Max: math.NaN()}), `policy: tool "refund": argument limit on "amount" has NaN max`},
		{"default_arg_limit_nan_max", policy.Config{Default: &policy.ToolRule{Class: policy.Read,
			ArgLimits: []policy.ArgLimit{{Field: "amount", Max: math.NaN()}}}}, `policy: default rule: argument limit on "amount" has NaN max`},
		{"role_rule_empty_pattern", roleRule(""), "policy: role rule with empty pattern"},
		{"role_rule_two_stars", roleRule("a*b*"), `policy: role rule "a*b*": only a trailing * is supported`},
		{"role_rule_double_trailing_star", roleRule("refund**"), `policy: role rule "refund**": only a trailing * is supported`},
		{"role_rule_typo_one_tool", roleRule("refnd"), `policy: role rule "refnd" names no tool rule`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := policy.New(tc.cfg)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("New(%+v) = %v, %v; want an error beginning %q", tc.cfg, p, err, tc.want)
			}
		})
	}
}

// TestAllowlistErrorSaysWhy pins the reason New gives for a write
// allowlist entry that allows nothing, which tells the operator what to
// change: a folded spelling of a write tool without a default rule, or
// with one while two write tools' names fold alike; a folded spelling of a
// read tool; and a name the default rule makes a read.
func TestAllowlistErrorSaysWhy(t *testing.T) {
	def := &policy.ToolRule{Class: policy.Read}
	for _, tc := range []struct {
		name string
		cfg  policy.Config
		want string
	}{
		{"folded_write_no_default", policy.Config{
			Tools:          []policy.ToolRule{{Name: "Refund", Class: policy.Write}},
			WriteAllowlist: []string{"refund"},
		}, `a call by "refund" has no rule (there is no default rule); list "Refund" instead`},
		{"folded_write_two_rules_fold_alike", policy.Config{
			Tools:          []policy.ToolRule{{Name: "Refund", Class: policy.Write}, {Name: "REFUND", Class: policy.Write}},
			Default:        def,
			WriteAllowlist: []string{"refund"},
		}, `has no rule (the names of several tool rules fold alike); list "`},
		{"folded_read_tool", policy.Config{
			Tools:          []policy.ToolRule{{Name: "Lookup", Class: policy.Read}},
			Default:        def,
			WriteAllowlist: []string{"lookup"},
		}, `"lookup" has no rule of its own: it is the read tool "Lookup" only under case folding`},
		{"default_read", policy.Config{
			Tools:          []policy.ToolRule{{Name: "Lookup", Class: policy.Read}},
			Default:        def,
			WriteAllowlist: []string{"create_ticket"},
		}, `"create_ticket" has no rule of its own, and the default rule makes it a read`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policy.New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New(allowlist %q) = %v, want an error with %q", tc.cfg.WriteAllowlist, err, tc.want)
			}
		})
	}
}

// TestFoldedNameNeedsRolesOfBothRules: a name that equals a tool rule's
// name only under folding needs the roles of that rule and of the default
// rule when both list roles, also when it is the policy's only such name:
// a caller with one rule's role only is refused it (hidden, or Forbidden
// with ShowForbidden), and RequiredRoles lists both sets.
func TestFoldedNameNeedsRolesOfBothRules(t *testing.T) {
	admin := &policy.Principal{Subject: "a", Roles: []string{"admin"}}
	staff := &policy.Principal{Subject: "s", Roles: []string{"staff"}}
	both := &policy.Principal{Subject: "b", Roles: []string{"staff", "admin"}}
	for _, show := range []bool{false, true} {
		p, err := policy.New(policy.Config{
			Tools:         []policy.ToolRule{{Name: "reset_key", Class: policy.Read, Roles: []string{"admin"}}},
			Default:       &policy.ToolRule{Class: policy.Read, Roles: []string{"staff"}},
			ShowForbidden: show,
		})
		if err != nil {
			t.Fatal(err)
		}
		refused := policy.NotFound
		if show {
			refused = policy.Forbidden
		}
		for _, tc := range []struct {
			pr   *policy.Principal
			tool string
			want policy.Code
		}{
			{admin, "reset_key", policy.Allowed},
			{staff, "reset_key", refused},
			{admin, "RESET_KEY", refused},
			{staff, "RESET_KEY", refused},
			{both, "RESET_KEY", policy.Allowed},
			{staff, "other", policy.Allowed},
		} {
			if d := p.Authorize(tc.pr, tc.tool); d.Code != tc.want {
				t.Errorf("ShowForbidden %v: Authorize(%v, %q) = %q, want %q", show, tc.pr.Roles, tc.tool, d.Code, tc.want)
			}
			if got, want := p.Visible(tc.pr, tc.tool), show || tc.want == policy.Allowed; got != want {
				t.Errorf("ShowForbidden %v: Visible(%v, %q) = %v, want %v", show, tc.pr.Roles, tc.tool, got, want)
			}
		}
	}
	p, err := policy.New(policy.Config{
		Tools:   []policy.ToolRule{{Name: "reset_key", Class: policy.Read, Roles: []string{"admin"}}},
		Default: &policy.ToolRule{Class: policy.Read, Roles: []string{"staff"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.RequiredRoles("RESET_KEY"), [][]string{{"admin"}, {"staff"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("RequiredRoles(RESET_KEY) = %q, want %q", got, want)
	}
}

// TestCheckNameRefusesStrayContinuationByte: a name whose only non-ASCII
// byte is 0x80 (the smallest, a lone UTF-8 continuation byte) is not valid
// UTF-8, and CheckName and New refuse it like any other invalid name.
func TestCheckNameRefusesStrayContinuationByte(t *testing.T) {
	for _, name := range []string{"\x80", "reset\x80key", "reset_key\x80"} {
		if err := policy.CheckName(name); err == nil || !strings.Contains(err.Error(), "is not valid UTF-8") {
			t.Errorf("CheckName(%q) = %v, want not valid UTF-8", name, err)
		}
		if _, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: name, Class: policy.Read}}}); err == nil {
			t.Errorf("New with tool %q = nil error, want it refused", name)
		}
	}
}

// TestHasArgLimits pins when a gateway must decode a call's arguments for
// Decide: when the rule that applies to the name has at least one argument
// limit (its own, or the default's for a folded spelling), and not when it
// has none or there is no rule. A false for a limited tool would make
// Decide refuse every call to it (the arguments would be missing).
func TestHasArgLimits(t *testing.T) {
	p, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "refund", Class: policy.Read, ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 100}}},
			{Name: "status", Class: policy.Read},
		},
		Default: &policy.ToolRule{Class: policy.Read, ArgLimits: []policy.ArgLimit{{Field: "n", Max: 5}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	q, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "status", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p    *policy.Policy
		tool string
		want bool
	}{
		{p, "refund", true},
		{p, "status", false},
		{p, "Status", true}, // folded: the default's limit applies too
		{p, "other", true},  // the default rule
		{q, "status", false},
		{q, "other", false}, // no rule
	} {
		if got := tc.p.HasArgLimits(tc.tool); got != tc.want {
			t.Errorf("HasArgLimits(%q) = %v, want %v", tc.tool, got, tc.want)
		}
	}
}

// TestToolsSorted pins that Tools lists the names of the tool rules
// sorted, whatever their order in the Config, and that CheckTool names
// the first of them, sorted, when a name folds onto several.
func TestToolsSorted(t *testing.T) {
	var rules []policy.ToolRule
	var want []string
	for c := 'z'; c >= 'a'; c-- {
		rules = append(rules, policy.ToolRule{Name: "tool_" + string(c), Class: policy.Read})
		want = append(want, "tool_"+string(c))
	}
	rules = append(rules, policy.ToolRule{Name: "refund", Class: policy.Read}, policy.ToolRule{Name: "REFUND", Class: policy.Read})
	want = append(want, "refund", "REFUND")
	slices.Sort(want)
	p, err := policy.New(policy.Config{Tools: rules})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Tools(); !slices.Equal(got, want) {
		t.Errorf("Tools() = %q, want %q", got, want)
	}
	if err := p.CheckTool("Refund", nil); err == nil || !strings.Contains(err.Error(), `the rule for "REFUND"`) {
		t.Errorf("CheckTool(Refund) = %v, want an error naming the rule for \"REFUND\"", err)
	}
}
