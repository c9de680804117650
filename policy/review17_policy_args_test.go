package policy_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// otherNumber is a number type of another JSON library, as
// json-iterator's Number: its text, with String and Float64 methods.
type otherNumber string

func (n otherNumber) String() string               { return string(n) }
func (n otherNumber) Float64() (float64, error)    { return strconv.ParseFloat(string(n), 64) }
func (n otherNumber) Int64() (int64, error)        { return strconv.ParseInt(string(n), 10, 64) }
func (n otherNumber) MarshalJSON() ([]byte, error) { return []byte(n), nil }

// TestMapArgsOtherNumberTypes: MapArgs counts only a finite float64 and a
// json.Number as numbers, as its documentation says. Another library's
// number type was counted too, through its Float64 method, without the
// checks a json.Number gets: its text was never compared exactly, so
// "100.000000000000001" passed a limit of 100 (a handler decoding it
// exactly acts on more), and text that is no JSON number ("-Inf", "0x1p3")
// counted as the number strconv reads, -Inf passing every limit.
func TestMapArgsOtherNumberTypes(t *testing.T) {
	p, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "trigger_refund", Class: policy.Write, ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 100}}}},
		WriteAllowlist: []string{"trigger_refund"},
	})
	if err != nil {
		t.Fatal(err)
	}
	support := &policy.Principal{Subject: "sam", Roles: []string{"support"}}
	for _, v := range []otherNumber{"100.000000000000001", "-Inf", "0x1p3", "1e2", "5"} {
		args := policy.MapArgs{"amount": v}
		if d := p.Decide(support, "trigger_refund", args); d.Allowed() {
			t.Errorf("Decide(amount %T(%q), max 100) allowed, want refused (not a number MapArgs reads)", v, string(v))
		}
		if f, ok := args.Number("amount"); ok {
			t.Errorf("MapArgs.Number(%T(%q)) = %v, true; want not a number", v, string(v), f)
		}
	}
	// The same texts as json.Number keep their documented meaning.
	for text, want := range map[string]bool{"100.000000000000001": false, "-Inf": false, "0x1p3": false, "1e2": true, "5": true} {
		if got := p.Decide(support, "trigger_refund", policy.MapArgs{"amount": json.Number(text)}).Allowed(); got != want {
			t.Errorf("Decide(amount json.Number(%q)) allowed = %v, want %v", text, got, want)
		}
	}
}

// TestCheckArgsWithoutRule: CheckArgs with the nil rule of a NotFound
// decision refuses the call as unknown instead of panicking (fail closed).
func TestCheckArgsWithoutRule(t *testing.T) {
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "search", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	pr := &policy.Principal{Subject: "bob"}
	d := p.Authorize(pr, "nope")
	if d.Code != policy.NotFound || d.Rule != nil {
		t.Fatalf("Authorize(nope) = %+v, want NotFound without a rule", d)
	}
	var got policy.Decision
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("CheckArgs(pr, nil rule, args) panicked: %v", r)
			}
		}()
		got = p.CheckArgs(pr, d.Rule, policy.MapArgs{"amount": 1.0})
	}()
	if got.Code != policy.NotFound || got.Allowed() {
		t.Errorf("CheckArgs(pr, nil rule, args) = %+v, want NotFound", got)
	}
}
