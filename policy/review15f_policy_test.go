package policy_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestNewRefusesInvisibleOnlyNames: a name made of nothing but
// default-ignorable characters (a variation selector, the combining
// grapheme joiner, a Hangul filler) is invisible, and its key is empty:
// a pattern "\u034f*" silently demanded its roles of every tool, like a
// lone "*", and a tool rule so named was the rule of every other
// invisible name. New refuses them, and CheckName refuses such a call.
func TestNewRefusesInvisibleOnlyNames(t *testing.T) {
	for _, n := range []string{"\u034f", "\ufe0f", "\u3164", "\u115f\u1160", "\ufe0f\u034f"} {
		cfgs := map[string]policy.Config{
			"role rule prefix": {RoleRules: []policy.RoleRule{{Pattern: n + "*", Roles: []string{"admin"}}}},
			"role rule exact":  {RoleRules: []policy.RoleRule{{Pattern: n, Roles: []string{"admin"}}}},
			"tool rule":        {Tools: []policy.ToolRule{{Name: n, Class: policy.Read}}},
			"allowlist":        {WriteAllowlist: []string{n}},
			"role":             {Tools: []policy.ToolRule{{Name: "t", Class: policy.Read, Roles: []string{n}}}},
			"field": {Tools: []policy.ToolRule{{Name: "t", Class: policy.Read,
				ArgLimits: []policy.ArgLimit{{Field: n, Max: 1}}}}},
		}
		for what, cfg := range cfgs {
			_, err := policy.New(cfg)
			if err == nil || !strings.Contains(err.Error(), "invisible") {
				t.Errorf("%s %+q: New error %v, want one saying the name is invisible", what, n, err)
			}
		}
		if err := policy.CheckName(n); err == nil {
			t.Errorf("CheckName(%+q) = nil, want an error", n)
		}
	}
	// Ignorable characters within a visible name stay accepted.
	for _, n := range []string{"\u2764\ufe0f_tool", "a\u034fb", "\u3131\u3164"} {
		if _, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: n, Class: policy.Read}}}); err != nil {
			t.Errorf("tool %+q: %v", n, err)
		}
	}
}

// TestArgLimitRefusesNonJSONNumbers: a json.Number whose text is not JSON
// number syntax ("-Inf", "0x1p3", "+5") cannot come from a JSON call, and
// a handler cannot be relied on to read it as the limit did: it is not a
// number, and a limited call carrying it is refused. So is an infinite
// float64, which no JSON text decodes to. CheckArgs itself still takes
// -Inf from an Args as below every limit: the gateway's permissiveArgs
// relies on it to list the tools that have limits.
func TestArgLimitRefusesNonJSONNumbers(t *testing.T) {
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{{
		Name: "trigger_refund", Class: policy.Read,
		ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 100}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{
		json.Number("-Inf"), json.Number("-infinity"), json.Number("0x1p3"), json.Number("+5"),
		json.Number(" 5"), json.Number("5_0"), math.Inf(-1), math.Inf(1),
	} {
		if d := p.Decide(nil, "trigger_refund", policy.MapArgs{"amount": v}); d.Allowed() {
			t.Errorf("amount %#v: allowed, want refused", v)
		}
		if _, ok := (policy.MapArgs{"amount": v}).Number("amount"); ok {
			t.Errorf("MapArgs.Number(%#v) ok, want not a number", v)
		}
	}
	for _, v := range []any{json.Number("5"), json.Number("-1e2"), json.Number("100.0"), 99.5} {
		if d := p.Decide(nil, "trigger_refund", policy.MapArgs{"amount": v}); !d.Allowed() {
			t.Errorf("amount %#v: %v, want allowed", v, d.Reason)
		}
	}
	if d := p.Decide(nil, "trigger_refund", minusInf{}); !d.Allowed() {
		t.Errorf("an Args whose number is -Inf: %v, want allowed", d.Reason)
	}
}

// minusInf is an Args like the gateway's permissiveArgs.
type minusInf struct{}

func (minusInf) Number(string) (float64, bool) { return math.Inf(-1), true }
