package policy_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestMapArgsDelimiterVariants: MapArgs reads nothing for a field when
// another key equals it under encoding/json/v2's case-insensitive matching
// (MatchCaseInsensitiveNames, a `case:ignore` tag), which ignores '_' and
// '-' as well as letter case: with jsontext.AllowDuplicateNames, v2 gives
// a handler's field `json:"amount,case:ignore"` the value of the last of
// "amount" and "a_mount", so {"amount":1,"a_mount":1e9} ran with 1e9 while
// the limit checked 1. (Checked against Go 1.26's encoding/json/v2 built
// with GOEXPERIMENT=jsonv2; encoding/json's v1 API keeps '_' and '-'.)
func TestMapArgsDelimiterVariants(t *testing.T) {
	p, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{{Name: "trigger_refund", Class: policy.Write, ArgLimits: []policy.ArgLimit{
			{Field: "amount", Max: 100},
			{Field: "max_amount", Max: 100},
			{Field: "seats", Max: 100},
		}}},
		WriteAllowlist: []string{"trigger_refund"},
	})
	if err != nil {
		t.Fatal(err)
	}
	support := &policy.Principal{Subject: "sam", Roles: []string{"support"}}
	tests := []struct {
		name string
		args policy.MapArgs
		want bool // allowed
	}{
		{"plain", policy.MapArgs{"amount": 1.0, "max_amount": 1.0, "seats": 1.0}, true},
		{"over_the_limit", policy.MapArgs{"amount": 1.0, "max_amount": 101.0, "seats": 1.0}, false},
		{"other_keys_with_delimiters", policy.MapArgs{"amount": 1.0, "max_amount": 1.0, "seats": 1.0, "note-id": 5.0, "x_y": 1e9}, true},
		{"underscore_inside", policy.MapArgs{"amount": 1.0, "max_amount": 1.0, "seats": 1.0, "a_mount": 1e9}, false},
		{"dash_and_case", policy.MapArgs{"amount": 1.0, "max_amount": 1.0, "seats": 1.0, "-AMOUNT-": 1e9}, false},
		{"underscores_at_ends", policy.MapArgs{"amount": 1.0, "max_amount": 1.0, "seats": 1.0, "_a_mount_": json.Number("1e9")}, false},
		{"delimiter_dropped", policy.MapArgs{"amount": 1.0, "max_amount": 1.0, "seats": 1.0, "MAXAMOUNT": 1e9}, false},
		{"delimiter_swapped", policy.MapArgs{"amount": 1.0, "max_amount": 1.0, "seats": 1.0, "max-amount": 1e9}, false},
		{"long_s_and_dash", policy.MapArgs{"amount": 1.0, "max_amount": 1.0, "seats": 1.0, "\u017fea-ts": 1e9}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Decide(support, "trigger_refund", tt.args).Allowed(); got != tt.want {
				t.Errorf("Decide(trigger_refund, %v) allowed = %v, want %v", tt.args, got, tt.want)
			}
		})
	}
	for _, args := range []policy.MapArgs{
		{"amount": json.Number("1"), "a-mount": json.Number("1e9")},
		{"amount": json.Number("1"), "__Amount": json.Number("1e9")},
	} {
		if v, ok := args.Number("amount"); ok {
			t.Errorf("MapArgs(%v).Number(amount) = %v, true; want unreadable", args, v)
		}
		if s, ok := args.NumberText("amount"); ok {
			t.Errorf("MapArgs(%v).NumberText(amount) = %q, true; want unreadable", args, s)
		}
	}
}

// TestMapArgsNameMatchAsJSONv2: a field is unreadable exactly when another
// key equals it as encoding/json/v2's foldName has it: strings.EqualFold of
// the names without '_' and '-' (fold.go in Go 1.26's encoding/json/v2),
// which also covers encoding/json's strings.EqualFold of the names as they
// are. Names with the Kelvin sign, the long s, invalid UTF-8 (read as
// U+FFFD by both), delimiters only and the empty name.
func TestMapArgsNameMatchAsJSONv2(t *testing.T) {
	v2Fold := func(s string) string { return strings.NewReplacer("_", "", "-", "").Replace(s) }
	names := []string{
		"", "_", "-", "__", "kind", "KIND", "\u212aind", "k_ind", "\u212a-IND", "kin", "kinds",
		"seats", "\u017feats", "s_e_a_t_s", "sea\u200bts", "\xff", "\ufffd", "_\xff-", "\xfe",
		"amount", "a__mount", "amoun_t-", "amounT", "ammount", "\uff41mount", "_Amount_x",
	}
	for _, field := range names {
		for _, other := range names {
			if other == field {
				continue
			}
			args := policy.MapArgs{field: json.Number("1"), other: json.Number("2")}
			want := !strings.EqualFold(v2Fold(field), v2Fold(other))
			if strings.EqualFold(field, other) && want {
				t.Fatalf("reference: v1 match %q, %q not a v2 match", field, other)
			}
			if _, got := args.Number(field); got != want {
				t.Errorf("MapArgs{%q, %q}.Number(%q) ok = %v, want %v", field, other, field, got, want)
			}
		}
	}
}
