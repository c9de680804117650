package policy_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// review57Decide builds the policy of a rule file whose one tool, refund,
// has the argument limit limit, and decides a call by a caller with roles
// whose arguments are the JSON object args, decoded as the root package
// decodes them (UseNumber).
func review57Decide(t *testing.T, limit, args string, roles ...string) policy.Decision {
	t.Helper()
	doc := `{"tools":[{"name":"refund","class":"read","arg_limits":[` + limit + `]}]}`
	cfg, err := policy.ParseConfig([]byte(doc))
	if err != nil {
		t.Fatalf("ParseConfig(%s): %v", doc, err)
	}
	p, err := policy.New(cfg)
	if err != nil {
		t.Fatalf("New(ParseConfig(%s)): %v", doc, err)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(args)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return p.Decide(&policy.Principal{Subject: "sam", Roles: roles}, "refund", policy.MapArgs(m))
}

// TestReview57ArgLimitMin: an argument limit had only "max", so a refund
// limited to "amount" 100 let a caller send -5 (a refund the other way).
// "min" bounds a number from below as "max" does from above: inclusive,
// compared by its exact decimal value with the min as written, exempt
// roles alike; "max" may then be left out.
func TestReview57ArgLimitMin(t *testing.T) {
	for _, tc := range []struct {
		name, limit, args string
		want              policy.Code
	}{
		{"negative_refused", `{"field":"amount","min":0,"max":100}`, `{"amount":-5}`, policy.Forbidden},
		{"min_itself", `{"field":"amount","min":0,"max":100}`, `{"amount":0}`, policy.Allowed},
		{"negative_zero", `{"field":"amount","min":0,"max":100}`, `{"amount":-0.0}`, policy.Allowed},
		{"between", `{"field":"amount","min":0,"max":100}`, `{"amount":50}`, policy.Allowed},
		{"max_still", `{"field":"amount","min":0,"max":100}`, `{"amount":101}`, policy.Forbidden},
		{"min_only", `{"field":"amount","min":1}`, `{"amount":1e300}`, policy.Allowed},
		{"min_only_below", `{"field":"amount","min":1}`, `{"amount":0.5}`, policy.Forbidden},
		{"min_as_written", `{"field":"amount","min":0.01}`, `{"amount":0.01}`, policy.Allowed},
		{"min_as_written_text", `{"field":"amount","min":0.01}`, `{"amount":1e-2}`, policy.Allowed},
		// Rounds to the float64 of 0.01, yet is below it as written.
		{"rounds_to_min", `{"field":"amount","min":0.01}`, `{"amount":0.0099999999999999999}`, policy.Forbidden},
		{"rounds_to_min_2", `{"field":"amount","min":9007199254740992}`, `{"amount":9007199254740991.9}`, policy.Forbidden},
		{"negative_min", `{"field":"amount","min":-0.7}`, `{"amount":-0.7}`, policy.Allowed},
		{"negative_min_rounds", `{"field":"amount","min":-0.7}`, `{"amount":-0.70000000000000001}`, policy.Forbidden},
		{"missing", `{"field":"amount","min":0}`, `{}`, policy.Forbidden},
		{"string", `{"field":"amount","min":0}`, `{"amount":"5"}`, policy.Forbidden},
		{"exempt", `{"field":"amount","min":0,"exempt_roles":["finance"]}`, `{"amount":-5}`, policy.Allowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			roles := []string{"support"}
			if strings.Contains(tc.limit, "finance") {
				roles = []string{"finance"}
			}
			d := review57Decide(t, tc.limit, tc.args, roles...)
			if d.Code != tc.want {
				t.Fatalf("limit %s, arguments %s: %v (%s), want %v", tc.limit, tc.args, d.Code, d.Reason, tc.want)
			}
			if tc.want == policy.Forbidden && strings.Contains(tc.args, "-5") && !strings.Contains(d.Reason, "below") {
				t.Errorf("reason %q does not say the argument is below the limit", d.Reason)
			}
		})
	}
}

// TestReview57ArgLimitMinParse: ParseConfig refuses a "min" it would read
// otherwise than written, as it does a "max": one that reads as a float64
// whose shortest decimal, which calls are compared with, is below the
// number written (the limit would let through the numbers between the
// two); a limit with neither bound; and New refuses a min above the max,
// a limit no number passes.
func TestReview57ArgLimitMinParse(t *testing.T) {
	tool := func(limit string) string {
		return `{"tools":[{"name":"refund","class":"read","arg_limits":[` + limit + `]}]}`
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"min_rounds_down", tool(`{"field":"f","min":9007199254740993}`), `tools[0].arg_limits[0].min: 9007199254740993 reads as the float64 9.007199254740992e+15, below it`},
		{"min_not_a_number", tool(`{"field":"f","min":"0"}`), `tools[0].arg_limits[0].min: want a number, not a string`},
		{"min_null", tool(`{"field":"f","min":null}`), `tools[0].arg_limits[0].min: want a number, not null`},
		{"min_infinite", tool(`{"field":"f","min":-1e400}`), `tools[0].arg_limits[0].min: -1e400: not a finite float64`},
		{"min_twice", tool(`{"field":"f","min":0,"min":1}`), `tools[0].arg_limits[0].min: given twice`},
		{"min_case", tool(`{"field":"f","Min":0}`), `member names are lower case: "min"`},
		{"min_reads_as_zero", tool(`{"field":"f","min":1e-400}`), `tools[0].arg_limits[0].min: 1e-400 reads as the float64 0, below it`},
		{"no_bound", tool(`{"field":"f"}`), `tools[0].arg_limits[0]: "max" is required`},
		{"min_above_max", tool(`{"field":"f","min":2,"max":1}`), `argument limit on "f": min 2 is above max 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := policy.ParseConfig([]byte(tc.doc))
			if err == nil {
				_, err = policy.New(cfg)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseConfig and New(%s): %v; want an error with %q", tc.doc, err, tc.want)
			}
		})
	}
	// A min a float64 holds as written, or that rounds up to a float64
	// whose decimal is above it (the limit is then stricter), is accepted.
	for _, min := range []string{"0", "-0", "0.01", "-1.7976931348623157e308", "9007199254740995"} {
		doc := tool(`{"field":"f","min":` + min + `}`)
		cfg, err := policy.ParseConfig([]byte(doc))
		if err == nil {
			_, err = policy.New(cfg)
		}
		if err != nil {
			t.Errorf("ParseConfig and New(%s): %v", doc, err)
		}
	}
}
