package policy_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview56MapArgsNaNIsNoNumber: MapArgs.Number's doc counts only
// finite float64 values as numbers, yet it gave a NaN (which a MapArgs
// built in Go may hold) as a number, so CheckArgs refused it as above the
// limit rather than as no number, and a caller of Number got NaN, true.
func TestReview56MapArgsNaNIsNoNumber(t *testing.T) {
	m := policy.MapArgs{"amount": math.NaN()}
	if v, ok := m.Number("amount"); ok {
		t.Errorf("MapArgs{amount: NaN}.Number = %v, true; want false (not a finite float64)", v)
	}
	if s, ok := m.NumberText("amount"); ok {
		t.Errorf("MapArgs{amount: NaN}.NumberText = %q, true; want false", s)
	}
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "refund", Class: policy.Read,
		ArgLimits: []policy.ArgLimit{{Field: "amount", Max: math.Inf(1)}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Decide(nil, "refund", m); d.Allowed() || !strings.Contains(d.Reason, "must be a number") {
		t.Errorf("Decide(amount NaN) = %v (%s); want refused as no number", d.Code, d.Reason)
	}
}

// TestReview56ParseConfigMaxLoosenedByRounding: a rule file's "max" is
// read as its nearest float64, and a call's number is compared with the
// shortest decimal that reads as that float64. When that decimal is
// above the number written (9007199254740995 is the float64
// 9007199254740996), the limit allowed more than its author wrote, with
// no word: a call of 9007199254740996, which a handler decoding it
// exactly acts on, passed a "max": 9007199254740995. ParseConfig refuses
// such a max, naming it and a value that is exact.
func TestReview56ParseConfigMaxLoosenedByRounding(t *testing.T) {
	for _, tc := range []struct{ max, above string }{
		{"9007199254740995", "9007199254740996"},
		{"12345678901234567", "12345678901234568"},
		{"99.989999999999995", "99.99"},
		{"-0.70000000000000001", "-0.7"},
		{"-1e-400", "0"},
		{"0.12345678901234567891", "0.12345678901234568"},
	} {
		doc := `{"tools":[{"name":"refund","class":"read","arg_limits":[{"field":"amount","max":` + tc.max + `}]}]}`
		cfg, err := policy.ParseConfig([]byte(doc))
		if err != nil {
			if !strings.Contains(err.Error(), "tools[0].arg_limits[0].max") {
				t.Errorf(`"max": %s: %v; want an error naming tools[0].arg_limits[0].max`, tc.max, err)
			}
			continue
		}
		p, err := policy.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(`{"amount":` + tc.above + `}`)))
		dec.UseNumber()
		var args map[string]any
		if err := dec.Decode(&args); err != nil {
			t.Fatal(err)
		}
		if d := p.Decide(nil, "refund", policy.MapArgs(args)); d.Allowed() {
			t.Errorf(`"max": %s allows an amount of %s, above it`, tc.max, tc.above)
		}
	}
}

// TestReview56ParseConfigMaxAsWrittenAccepted: a max whose float64 is
// the number written, or below it (the limit is then stricter, as the
// package doc says of 100.000000000000001), is accepted, and the value
// the refusal advises is one ParseConfig takes.
func TestReview56ParseConfigMaxAsWrittenAccepted(t *testing.T) {
	for _, max := range []string{"100", "1e2", "100.0", "99.99", "-0", "0", "-5", "1e-400", "-0.69999999999999998",
		"100.000000000000001", "9007199254740993", "1.7976931348623157e308", "5e-324", "0.1"} {
		doc := `{"tools":[{"name":"refund","class":"read","arg_limits":[{"field":"amount","max":` + max + `}]}]}`
		if _, err := policy.ParseConfig([]byte(doc)); err != nil {
			t.Errorf(`"max": %s: %v; want accepted`, max, err)
		}
	}
	doc := `{"tools":[{"name":"refund","class":"read","arg_limits":[{"field":"amount","max":9007199254740995}]}]}`
	_, err := policy.ParseConfig([]byte(doc))
	if err == nil {
		t.Fatal("max 9007199254740995 accepted")
	}
	i := strings.Index(err.Error(), "write ")
	if i < 0 {
		t.Fatalf("error %q advises no value", err)
	}
	advised := strings.Fields(err.Error()[i+len("write "):])[0]
	doc = strings.Replace(doc, "9007199254740995", advised, 1)
	if _, err := policy.ParseConfig([]byte(doc)); err != nil {
		t.Errorf("the advised max %s: %v", advised, err)
	}
}

// TestReview56LimitThatNeverApplies: an argument limit whose exempt roles
// include every role of a role set each caller of the tool must have (the
// rule's Roles, or a role rule's that matches its name) applies to no
// caller: it is a mistake (the author meant to limit some role), and New
// refuses it, naming the rule and the limit, as it refuses other rules
// that cannot apply.
func TestReview56LimitThatNeverApplies(t *testing.T) {
	limit := func(exempt ...string) []policy.ArgLimit {
		return []policy.ArgLimit{{Field: "amount", Max: 100, ExemptRoles: exempt}}
	}
	for _, tc := range []struct {
		name string
		cfg  policy.Config
		want string
	}{
		{"own_roles", policy.Config{Tools: []policy.ToolRule{{Name: "refund", Class: policy.Read,
			Roles: []string{"finance"}, ArgLimits: limit("finance")}}},
			`policy: tool "refund": argument limit on "amount"`},
		{"own_roles_subset", policy.Config{Tools: []policy.ToolRule{{Name: "refund", Class: policy.Read,
			Roles: []string{"finance", "ops"}, ArgLimits: limit("ops", "finance", "audit")}}},
			`policy: tool "refund": argument limit on "amount"`},
		{"prefix_role_rule", policy.Config{
			Tools:     []policy.ToolRule{{Name: "admin_refund", Class: policy.Read, ArgLimits: limit("admin")}},
			RoleRules: []policy.RoleRule{{Pattern: "ADMIN_*", Roles: []string{"admin"}}}},
			`policy: tool "admin_refund": argument limit on "amount"`},
		{"exact_role_rule", policy.Config{
			Tools:     []policy.ToolRule{{Name: "refund", Class: policy.Read, ArgLimits: limit("finance")}},
			RoleRules: []policy.RoleRule{{Pattern: "Refund", Roles: []string{"finance"}}}},
			`policy: tool "refund": argument limit on "amount"`},
		{"default_rule", policy.Config{Default: &policy.ToolRule{Class: policy.Read,
			Roles: []string{"staff"}, ArgLimits: limit("staff")}},
			`policy: default rule: argument limit on "amount"`},
		{"default_rule_every_tool", policy.Config{Default: &policy.ToolRule{Class: policy.Read, ArgLimits: limit("staff")},
			RoleRules: []policy.RoleRule{{Pattern: "*", Roles: []string{"staff"}}}},
			`policy: default rule: argument limit on "amount"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policy.New(tc.cfg)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !strings.Contains(err.Error(), "never applies") {
				t.Errorf("New = %v; want an error beginning %q saying the limit never applies", err, tc.want)
			}
		})
	}
	// A limit that applies to some caller is accepted.
	for _, cfg := range []policy.Config{
		{Tools: []policy.ToolRule{{Name: "refund", Class: policy.Read, Roles: []string{"support", "finance"}, ArgLimits: limit("finance")}}},
		{Tools: []policy.ToolRule{{Name: "refund", Class: policy.Read, ArgLimits: limit("finance")}}},
		{Tools: []policy.ToolRule{{Name: "refund", Class: policy.Read, ArgLimits: limit("finance")}},
			RoleRules: []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"finance"}}}},
		{Tools: []policy.ToolRule{{Name: "refund", Class: policy.Read, Roles: []string{"Finance"}, ArgLimits: limit("finance")}}},
		{Default: &policy.ToolRule{Class: policy.Read, ArgLimits: limit("staff")},
			RoleRules: []policy.RoleRule{{Pattern: "a*", Roles: []string{"staff"}}}},
	} {
		if _, err := policy.New(cfg); err != nil {
			t.Errorf("New(%+v) = %v; want accepted", cfg, err)
		}
	}
}

// TestReview56TinyCostRefused: a "cost" of 1e-400 read as 0, so the tool
// cost nothing (and the guard called it free), silently.
func TestReview56TinyCostRefused(t *testing.T) {
	for _, c := range []struct {
		cost string
		ok   bool
	}{{"1e-400", false}, {"0.0", true}, {"0e5", true}, {"-0", true}, {"0", true}, {"1e-300", true}, {"2.5", true}} {
		_, err := policy.ParseConfig([]byte(`{"tools":[{"name":"a","class":"read","cost":` + c.cost + `}]}`))
		if (err == nil) != c.ok {
			t.Errorf("cost %s: %v, want accepted %v", c.cost, err, c.ok)
		}
	}
}
