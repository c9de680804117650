package policy

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// New's error for a write allowlist entry that equals a write tool rule's
// name only under folding says how to make the entry allow something. The
// remedy must work: with the tool it names listed too, the entry's call is
// allowed. Without a default rule, or when the names of two rules fold
// alike, a call by the entry's spelling has no rule at all (NotFound), and
// listing the tool changes nothing: the error must not offer that remedy.
func TestReview25bFoldedWriteErrorRemedyWorks(t *testing.T) {
	advice := regexp.MustCompile(`unless ("[^"]*") is listed too`)
	def := &ToolRule{Class: Write}
	for _, tc := range []struct {
		name  string
		cfg   Config
		entry string
	}{
		{"with default", Config{
			Tools:          []ToolRule{{Name: "trigger_refund", Class: Write}},
			Default:        def,
			WriteAllowlist: []string{"Trigger_Refund"},
		}, "Trigger_Refund"},
		{"without default", Config{
			Tools:          []ToolRule{{Name: "trigger_refund", Class: Write}},
			WriteAllowlist: []string{"Trigger_Refund"},
		}, "Trigger_Refund"},
		{"two writes fold alike, one listed", Config{
			Tools:          []ToolRule{{Name: "Sync", Class: Write}, {Name: "sync", Class: Write}},
			Default:        def,
			WriteAllowlist: []string{"SYNC", "Sync"},
		}, "SYNC"},
		{"a read and a write fold alike", Config{
			Tools:          []ToolRule{{Name: "get", Class: Read}, {Name: "GET", Class: Write}},
			Default:        def,
			WriteAllowlist: []string{"Get"},
		}, "Get"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			for range 3 { // follow the advice while it is given
				_, err := New(cfg)
				if err == nil {
					t.Fatalf("New(%v) = nil error, want the entry %q refused", cfg.WriteAllowlist, tc.entry)
				}
				if !strings.Contains(err.Error(), `"`+tc.entry+`"`) {
					t.Fatalf("New = %v, want an error naming %q", err, tc.entry)
				}
				m := advice.FindStringSubmatch(err.Error())
				if m == nil {
					return // no remedy offered: nothing to check
				}
				var tool string
				if e := json.Unmarshal([]byte(m[1]), &tool); e != nil {
					t.Fatal(e)
				}
				cfg.WriteAllowlist = append(cfg.WriteAllowlist[:len(cfg.WriteAllowlist):len(cfg.WriteAllowlist)], tool)
				p, err := New(cfg)
				if err != nil {
					continue // more advice
				}
				if d := p.Authorize(&Principal{Subject: "u"}, tc.entry); !d.Allowed() {
					t.Fatalf("the error advised listing %s; with %v, %q is %v, want allowed", m[1], cfg.WriteAllowlist, tc.entry, d.Code)
				}
				return
			}
			t.Fatal("advice never ends")
		})
	}
}

// A caller's ways of sending an argument a limit caps, decoded as the guard
// and a Go handler decode them (encoding/json, UseNumber): every shape that
// is not a number at or below the limit under the field's exact name is
// refused, and the exempt role is exact ("Finance" is not "finance").
// Given twice, the field's last value is read, as a handler's encoding/json
// reads it.
func TestReview25bArgLimitCallerShapes(t *testing.T) {
	p, err := New(Config{Tools: []ToolRule{{Name: "refund", Class: Read,
		ArgLimits: []ArgLimit{{Field: "amount", Max: 1000, ExemptRoles: []string{"finance"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args string
		ok   bool
	}{
		{`{"amount":1000}`, true},
		{`{"amount":1e3}`, true},
		{`{"amount":1E+3}`, true},
		{`{"amount":10000e-1}`, true},
		{`{"amount":-0}`, true},
		{`{"amount":"1000"}`, false},
		{`{"amount":1000.0000000000001}`, false},
		{`{"amount":1000.00000000000000001}`, false}, // 1000 as a float64
		{`{"amount":10000.1e-1}`, false},
		{`{"amount":[1]}`, false},
		{`{"amount":{"value":1}}`, false},
		{`{"amount":null}`, false},
		{`{"amount":true}`, false},
		{`{"Amount":5000}`, false},
		{`{"amount":1,"Amount":5000}`, false},
		{`{"amount":1,"AMOUNT":1}`, false},
		{`{"amount":1,"amount":5000}`, false},
		{`{"amount":5000,"amount":1}`, true},
		{`{"x":{"amount":1}}`, false},
		{`{}`, false},
	} {
		dec := json.NewDecoder(strings.NewReader(tc.args))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		for _, roles := range [][]string{nil, {"Finance"}, {"finance\u0307"}, {"ｆinance"}} {
			if d := p.Decide(&Principal{Subject: "u", Roles: roles}, "refund", MapArgs(m)); d.Allowed() != tc.ok {
				t.Errorf("%s, roles %q: %v (%s), want allowed %v", tc.args, roles, d.Code, d.Reason, tc.ok)
			}
		}
		if d := p.Decide(&Principal{Subject: "u", Roles: []string{"finance"}}, "refund", MapArgs(m)); !d.Allowed() {
			t.Errorf("%s, exempt: %v", tc.args, d.Code)
		}
	}
}
