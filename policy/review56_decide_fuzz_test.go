package policy_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// review56Number is the JSON number grammar (RFC 8259, section 6).
var review56Number = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// review56Amount is the reference reading of the argument "amount" of the
// JSON arguments text args, as a handler that decodes it exactly would
// have it: its exact value, or ok false when the call must be refused by
// a limit on it (not an object, no such member, not a number, a number
// beyond the float64 range, or another member whose name equals "amount"
// under simple case folding once '_' and '-' are dropped). skip is true
// for a number whose exponent math/big should not be asked to expand.
func review56Amount(args string) (v *big.Rat, ok, skip bool) {
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil || m == nil {
		return nil, false, false
	}
	plain := func(s string) string { return strings.NewReplacer("_", "", "-", "").Replace(s) }
	for k := range m {
		if k != "amount" && strings.EqualFold(plain(k), "amount") {
			return nil, false, false
		}
	}
	n, isNum := m["amount"].(json.Number)
	if !isNum || !review56Number.MatchString(string(n)) {
		return nil, false, false
	}
	if e := strings.IndexAny(string(n), "eE"); e >= 0 && len(strings.TrimLeft(string(n)[e+1:], "+-0")) > 4 {
		return nil, false, true
	}
	r, _ := new(big.Rat).SetString(string(n))
	if f, _ := r.Float64(); math.IsInf(f, 0) {
		return nil, false, false // no float64 holds it: refused
	}
	return r, true, false
}

// review56Le reports whether v is at most max as written: the shortest
// decimal that reads as max.
func review56Le(v *big.Rat, max float64) bool {
	m, _ := new(big.Rat).SetString(strconv.FormatFloat(max, 'e', -1, 64))
	return v.Cmp(m) <= 0
}

// review56Spellings are spellings of name a server lenient with the case
// of names takes for it: Go's, Python's and JavaScript's case mappings
// agree with these on ASCII and on the Kelvin sign and long s.
func review56Spellings(name string, seed uint) []string {
	out := []string{name, strings.ToUpper(name), strings.ToTitle(name)}
	if seed%2 == 1 {
		out = append(out, strings.ReplaceAll(strings.ToUpper(name), "S", "\u017f"))
	}
	return out
}

// FuzzReview56Decide holds Policy.Decide to the rules of a rule file (read
// by ParseConfig), against a reference evaluation independent of the
// package: the roles of
// the tool rule and of every role rule whose pattern the called name
// matches (by the reference spellings and prefix), and the argument limit
// compared by math/big with the limit the policy keeps (the shortest
// decimal of its float64), which must be no larger than the "max" written
// in the file, on arguments decoded as
// a handler decodes them. Every call the reference refuses is refused,
// under the tool's own name and every spelling of it; and under the tool's
// own name the decision is exactly the reference's (no false refusal
// either).
func FuzzReview56Decide(f *testing.F) {
	for i, s := range []struct{ name, args, max string }{
		{"trigger_refund", `{"amount":100}`, "100"},
		{"TRIGGER_REFUND", `{"amount":100.000000000000001}`, "100"},
		{"trigger_refund", `{"amount":99.99}`, "99.99"},
		{"trigger_refund", `{"amount":99.990000000000001}`, "99.99"},
		{"Trigger_Refund", `{"amount":1e2}`, "1e2"},
		{"trigger_refund", `{"amount":-0}`, "-0"},
		{"trigger_refund", `{"amount":"100"}`, "1000"},
		{"trigger_refund", `{"amount":1,"Amount":1000}`, "10"},
		{"trigger_refund", `{"amount":1000,"amount":1}`, "10"},
		{"trigger_refund", `{"a_mount":1000,"amount":1}`, "10"},
		{"trigger_refund", `[{"amount":1}]`, "10"},
		{"trigger_refund", `{"amount":{"value":1}}`, "10"},
		{"trigger_refund", `{}`, "10"},
		{"trigger_refund", `{"amount":1e400}`, "1e300"},
		{"trigger_refund", `{"amount":-1e-400}`, "0"},
		{"trigger_refund", `{"amount":9007199254740993}`, "9007199254740992"},
		{"trigger_refund", `{"amount":9007199254740996}`, "9007199254740995"},
		{"trigger_refund", `{"amount":99.99}`, "99.989999999999995"},
		{"admin_reset", `{"amount":1}`, "10"},
		{"ADMIN_RESET", `{"amount":1}`, "10"},
		{"lookup", `{}`, "10"},
		{"LOOKUP", `{"amount":5}`, "10"},
		{"other", `{"amount":5}`, "10"},
		{"other", `{"amount":5.0000000000000000001}`, "10"},
	} {
		f.Add(s.name, s.args, s.max, uint8(i), uint(i))
	}
	f.Fuzz(func(t *testing.T, name, args, maxText string, roleBits uint8, seed uint) {
		if !review56Number.MatchString(maxText) || len(maxText) > 40 {
			return
		}
		if e := strings.IndexAny(maxText, "eE"); e >= 0 && len(strings.TrimLeft(maxText[e+1:], "+-0")) > 4 {
			return // math/big would expand the exponent
		}
		const defaultMax = 5
		cfg, err := policy.ParseConfig([]byte(`{
			"tools": [
				{"name": "trigger_refund", "class": "write", "roles": ["support", "finance"],
				 "arg_limits": [{"field": "amount", "max": ` + maxText + `, "exempt_roles": ["finance"]}]},
				{"name": "lookup", "class": "read"}
			],
			"role_rules": [{"pattern": "admin_*", "roles": ["admin"]}],
			"write_allowlist": ["*"],
			"default": {"class": "read", "arg_limits": [{"field": "amount", "max": 5}]},
			"show_forbidden": ` + strconv.FormatBool(seed%3 == 0) + `}`))
		if err != nil {
			return // a max beyond the float64 range, or one it would loosen
		}
		max := cfg.Tools[0].ArgLimits[0].Max
		p, err := policy.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		written, _ := new(big.Rat).SetString(maxText)
		var roles []string
		for i, r := range []string{"support", "finance", "admin", "Finance", "Admin"} {
			if roleBits&(1<<i) != 0 {
				roles = append(roles, r)
			}
		}
		pr := &policy.Principal{Subject: "u", Roles: roles}
		has := func(r string) bool { return pr.HasRole(r) }
		amount, numeric, skip := review56Amount(args)
		if skip {
			return
		}
		le := func(m float64) bool { return numeric && review56Le(amount, m) }
		if numeric && amount.Cmp(written) > 0 && le(max) {
			t.Fatalf(`"max": %s (read as %v) allows the amount %s, above it`, maxText, max, amount.RatString())
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(args)))
		dec.UseNumber()
		var m map[string]any
		_ = dec.Decode(&m)
		margs := policy.MapArgs(m)

		// What the reference says every spelling of the tool's name needs.
		refund := (has("support") || has("finance")) && (has("finance") || le(max))
		for _, sp := range review56Spellings("trigger_refund", seed) {
			d := p.Decide(pr, sp, margs)
			if d.Allowed() && !refund {
				t.Fatalf("Decide(%v, %q, %s) allowed; the rule for trigger_refund (max %s) refuses it", roles, sp, args, maxText)
			}
			if sp == "trigger_refund" && d.Allowed() != refund {
				t.Fatalf("Decide(%v, %q, %s) = %v (%s); the rule (max %s) says allowed %v", roles, sp, args, d.Code, d.Reason, maxText, refund)
			}
			if sp != "trigger_refund" && d.Allowed() && !le(defaultMax) {
				t.Fatalf("Decide(%v, %q, %s) allowed; the default rule's limit (also another tool's at an exact server) refuses it", roles, sp, args)
			}
		}
		if d := p.Decide(pr, "lookup", margs); !d.Allowed() {
			t.Fatalf("Decide(%v, lookup, %s) = %v, want allowed", roles, args, d.Code)
		}

		// The fuzzed name: what the reference sees of it.
		d := p.Decide(pr, name, margs)
		if !d.Allowed() {
			return
		}
		lower, upper := strings.ToLower(name), strings.ToUpper(name)
		if (strings.HasPrefix(lower, "admin_") || strings.HasPrefix(upper, "ADMIN_")) && !has("admin") {
			t.Fatalf("Decide(%v, %q) allowed without the role admin that admin_* demands", roles, name)
		}
		if strings.EqualFold(name, "trigger_refund") || lower == "trigger_refund" || upper == "TRIGGER_REFUND" {
			if !refund {
				t.Fatalf("Decide(%v, %q, %s) allowed; the rule for trigger_refund (max %s) refuses it", roles, name, args, maxText)
			}
		}
		if name != "trigger_refund" && name != "lookup" && !le(defaultMax) {
			t.Fatalf("Decide(%v, %q, %s) allowed; the default rule's limit refuses it", roles, name, args)
		}
	})
}
