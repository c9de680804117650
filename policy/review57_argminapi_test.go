package policy_test

import (
	"math"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// review57Args is an ExactArgs whose amount is the float64 num and, when
// text is not empty, the JSON text text.
type review57Args struct {
	num  float64
	text string
}

func (a review57Args) Number(field string) (float64, bool) { return a.num, field == "amount" }

func (a review57Args) NumberText(field string) (string, bool) {
	return a.text, field == "amount" && a.text != ""
}

func review57Min(m float64) *float64 { return &m }

// TestReview57ArgLimitMinGo: ArgLimit.Min in a Config built in Go bounds
// an argument from below, by its float64 or, from an ExactArgs, by its
// text, which decides when it is not a JSON number or when the float64
// was misread.
func TestReview57ArgLimitMinGo(t *testing.T) {
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "refund", Class: policy.Read,
		ArgLimits: []policy.ArgLimit{{Field: "amount", Min: review57Min(-100), Max: math.Inf(1)}}}}})
	if err != nil {
		t.Fatal(err)
	}
	sam := &policy.Principal{Subject: "sam"}
	long := "-1" + strings.Repeat("0", 1000) + "e-990" // -1e10; ParseFloat reads -1e-191
	for _, tc := range []struct {
		name string
		args policy.Args
		want policy.Code
	}{
		{"float_above", policy.MapArgs{"amount": -99.0}, policy.Allowed},
		{"float_min", policy.MapArgs{"amount": -100.0}, policy.Allowed},
		{"float_below", policy.MapArgs{"amount": -100.5}, policy.Forbidden},
		{"float_huge", policy.MapArgs{"amount": math.MaxFloat64}, policy.Allowed},
		{"text_below", review57Args{-100, "-100.0000000000000001"}, policy.Forbidden},
		{"text_min", review57Args{-100, "-1e2"}, policy.Allowed},
		{"text_misread", review57Args{-1e-191, long}, policy.Forbidden},
		{"text_double_minus", review57Args{5, "--5"}, policy.Forbidden},
		{"text_plus", review57Args{5, "+5"}, policy.Forbidden},
		{"text_empty_float_only", review57Args{num: -101}, policy.Forbidden},
		{"nil_args", nil, policy.Forbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := p.Decide(sam, "refund", tc.args); d.Code != tc.want {
				t.Errorf("Decide(%+v) = %v (%s), want %v", tc.args, d.Code, d.Reason, tc.want)
			}
		})
	}
}

// TestReview57ArgLimitMinCopied: a Policy is immutable: a change to the
// caller's Min after New does not move the bound.
func TestReview57ArgLimitMinCopied(t *testing.T) {
	min := 0.0
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "refund", Class: policy.Read,
		ArgLimits: []policy.ArgLimit{{Field: "amount", Min: &min, Max: 100}}}}})
	if err != nil {
		t.Fatal(err)
	}
	min = -1000
	if d := p.Decide(&policy.Principal{Subject: "sam"}, "refund", policy.MapArgs{"amount": -5.0}); d.Allowed() {
		t.Errorf("after the caller's Min changed to -1000, amount -5 is allowed; want Forbidden")
	}
}

// TestReview57ArgLimitMinNew: New refuses a Min no number can pass.
func TestReview57ArgLimitMinNew(t *testing.T) {
	for _, tc := range []struct {
		name     string
		min, max float64
		want     string
	}{
		{"nan", math.NaN(), 1, `argument limit on "amount" has NaN min`},
		{"above_max", 2, 1, `argument limit on "amount": min 2 is above max 1: no number passes`},
		{"plus_inf", math.Inf(1), math.Inf(1), `argument limit on "amount": min +Inf: no number passes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "refund", Class: policy.Read,
				ArgLimits: []policy.ArgLimit{{Field: "amount", Min: review57Min(tc.min), Max: tc.max}}}}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New with min %v, max %v: %v; want an error with %q", tc.min, tc.max, err, tc.want)
			}
		})
	}
	// Min equal to Max, and -Inf (no bound), are accepted.
	for _, m := range []float64{1, math.Inf(-1)} {
		if _, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "refund", Class: policy.Read,
			ArgLimits: []policy.ArgLimit{{Field: "amount", Min: review57Min(m), Max: 1}}}}}); err != nil {
			t.Errorf("New with min %v, max 1: %v", m, err)
		}
	}
}

// TestReview57ArgLimitMinFolded: a name that equals the tool's only under
// case folding gets the limits of the tool rule and of the default rule,
// Min included.
func TestReview57ArgLimitMinFolded(t *testing.T) {
	p, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{{Name: "refund", Class: policy.Read,
			ArgLimits: []policy.ArgLimit{{Field: "amount", Min: review57Min(0), Max: 100}}}},
		Default: &policy.ToolRule{Class: policy.Read},
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Decide(&policy.Principal{Subject: "sam"}, "REFUND", policy.MapArgs{"amount": -5.0}); d.Allowed() {
		t.Errorf("Decide(REFUND, amount -5) allowed; want Forbidden by the refund rule's Min")
	}
}
