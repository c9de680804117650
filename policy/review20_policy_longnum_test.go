package policy_test

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// rawNumbers is an ExactArgs as the gateway builds one: the float64 of
// strconv.ParseFloat and the JSON text.
type rawNumbers map[string]string

func (r rawNumbers) Number(field string) (float64, bool) {
	f, err := strconv.ParseFloat(r[field], 64)
	return f, err == nil && !math.IsInf(f, 0)
}

func (r rawNumbers) NumberText(field string) (string, bool) {
	_, ok := r.Number(field)
	return r[field], ok
}

// TestReview20LongNumberMisreadByParseFloat: strconv.ParseFloat (and so
// json.Number.Float64 and encoding/json) misreads a number with more than
// 800 digits before its point: "1" and 1000 zeros "e-990" is 1e10, which
// it reads as 1e-191, under any limit. A handler that reads it exactly (a
// decimal type, Python's float behind the gateway) would act on 1e10. An
// argument limit compares by the text whenever the arguments have it, and
// MapArgs.Number gives the float64 nearest to the number's value.
func TestReview20LongNumberMisreadByParseFloat(t *testing.T) {
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "refund", Class: policy.Read,
		ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 100}}}}})
	if err != nil {
		t.Fatal(err)
	}
	zeros := strings.Repeat("0", 1000)
	for _, tc := range []struct {
		name, amount string
		value        float64 // the nearest float64
		want         policy.Code
	}{
		{"1e10_as_1001_digits", "1" + zeros + "e-990", 1e10, policy.Forbidden},
		{"1e10_with_fraction", "1" + zeros + ".5e-990", 1.00000000000000005e10, policy.Forbidden},
		{"101_as_1003_digits", "101" + zeros + "e-1000", 101, policy.Forbidden},
		{"1e500_as_1001_digits", "1" + zeros + "e-500", math.Inf(1), policy.Forbidden},
		{"1_as_1001_digits", "1" + zeros + "e-1000", 1, policy.Allowed},
		{"99_as_1002_digits", "99" + zeros + "e-1000", 99, policy.Allowed},
		{"point_one_long_fraction", "0." + zeros + "1e1000", 0.1, policy.Allowed},
		{"tiny", "1" + zeros + "e-1400", 1e-400, policy.Allowed},
		{"negative_long", "-2" + zeros + "e-990", -2e10, policy.Allowed},
	} {
		pr := &policy.Principal{Subject: "sam"}
		if d := p.Decide(pr, "refund", policy.MapArgs{"amount": json.Number(tc.amount)}); d.Code != tc.want {
			t.Errorf("%s: Decide(MapArgs amount %.30s...) = %v (%s), want %v", tc.name, tc.amount, d.Code, d.Reason, tc.want)
		}
		if d := p.Decide(pr, "refund", rawNumbers{"amount": tc.amount}); d.Code != tc.want {
			t.Errorf("%s: Decide(ExactArgs amount %.30s...) = %v (%s), want %v", tc.name, tc.amount, d.Code, d.Reason, tc.want)
		}
		got, ok := policy.MapArgs{"amount": json.Number(tc.amount)}.Number("amount")
		switch {
		case math.IsInf(tc.value, 0) && ok:
			t.Errorf("%s: MapArgs.Number = %v, true; want not a number (out of range)", tc.name, got)
		case !math.IsInf(tc.value, 0) && (!ok || got != tc.value):
			t.Errorf("%s: MapArgs.Number = %v, %v; want %v, true", tc.name, got, ok, tc.value)
		}
	}
}
