package policy_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview20LimitAsWritten: an argument limit allows the value its
// author wrote. "max": 99.99 is the float64 99.98999999999999488..., and
// a call's amount 99.99, read exactly (a json.Number, as the root package
// and the gateway pass it), was compared with that float64's exact value
// and refused. The limit is the decimal the author wrote (the shortest one
// that reads as Max): 99.99 itself passes, and a number just above it
// that still rounds to Max is refused, as before.
func TestReview20LimitAsWritten(t *testing.T) {
	for _, tc := range []struct {
		max, amount string
		want        policy.Code
	}{
		{"99.99", "99.99", policy.Allowed},
		{"99.99", "99.990", policy.Allowed},
		{"99.99", "9999e-2", policy.Allowed},
		{"99.99", "99.98999999999999", policy.Allowed},
		{"99.99", "99.990000000000001", policy.Forbidden}, // rounds to Max
		{"99.99", "99.991", policy.Forbidden},
		{"0.3", "0.3", policy.Allowed},
		{"0.3", "0.30000000000000001", policy.Forbidden}, // rounds to Max
		{"19.99", "19.99", policy.Allowed},
		{"-0.7", "-0.7", policy.Allowed},
		{"-0.7", "-0.69999999999999999", policy.Forbidden}, // rounds to Max
		{"0.1", "0.1", policy.Allowed},
		{"0.1", "0.10000000000000001", policy.Forbidden}, // rounds to Max
		{"100", "100", policy.Allowed},
		{"100", "100.000000000000001", policy.Forbidden},
		{"9007199254740992", "9007199254740992", policy.Allowed},
		{"9007199254740992", "9007199254740993", policy.Forbidden},
		{"1e22", "1e22", policy.Allowed},
		{"1e23", "1e23", policy.Allowed}, // the float64 is 9.999999999999999161e22
		{"1e23", "100000000000000000000001", policy.Forbidden},
	} {
		doc := `{"tools":[{"name":"refund","class":"read","arg_limits":[{"field":"amount","max":` + tc.max + `}]}]}`
		cfg, err := policy.ParseConfig([]byte(doc))
		if err != nil {
			t.Fatalf("ParseConfig(%s): %v", doc, err)
		}
		p, err := policy.New(cfg)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		// The arguments as the root package decodes them (UseNumber).
		dec := json.NewDecoder(bytes.NewReader([]byte(`{"amount":` + tc.amount + `}`)))
		dec.UseNumber()
		var args map[string]any
		if err := dec.Decode(&args); err != nil {
			t.Fatal(err)
		}
		d := p.Decide(&policy.Principal{Subject: "sam"}, "refund", policy.MapArgs(args))
		if d.Code != tc.want {
			t.Errorf(`"max": %s, amount %s: %v (%s), want %v`, tc.max, tc.amount, d.Code, d.Reason, tc.want)
		}
	}
}
