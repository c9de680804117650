package jsondup

import (
	"strings"
	"testing"
)

// TestReview18NumbersBeyondFloat64: a number literal that float64 cannot
// hold (1e309, -1e999) is valid JSON, and a decoder that keeps numbers as
// written (UseNumber, json.Number, a struct that skips the member) reads
// past it. The duplicate after it must still be found.
func TestReview18NumbersBeyondFloat64(t *testing.T) {
	all := func(int) bool { return true }
	for _, tc := range []struct {
		name, data string
		fold       func(int) bool
		key        string
		depth      int
	}{
		{"huge_before_dup", `{"x":1e309,"sub":"a","sub":"b"}`, nil, "sub", 1},
		{"negative_huge_before_folded_dup", `{"x":-1e999,"a":1,"A":2}`, all, "A", 1},
		{"huge_in_array_before_nested_dup", `{"l":[1e400],"o":{"k":1,"k":2}}`, nil, "k", 2},
		{"huge_top_level_array", `[1e309,{"a":1,"a":2}]`, nil, "a", 2},
		{"long_literal", `{"n":` + strings.Repeat("9", 400) + `,"a":1,"a":2}`, nil, "a", 1},
		{"tiny_is_fine_too", `{"n":1e-400,"a":1,"a":2}`, nil, "a", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, depth, found := Member([]byte(tc.data), tc.fold)
			if !found || name != tc.key || depth != tc.depth {
				t.Errorf("Member(%.60s) = %q, %d, %v; want %q, %d, true", tc.data, name, depth, found, tc.key, tc.depth)
			}
		})
	}
}

// TestReview18EscapedAndFoldedNames: names spelled with escapes, and the
// case-folding corners encoding/json matches (Kelvin sign, long s, final
// sigma), but not the ones it does not (ß and SS, dotless i and I).
func TestReview18EscapedAndFoldedNames(t *testing.T) {
	all := func(int) bool { return true }
	for _, tc := range []struct {
		name, data string
		fold       func(int) bool
		found      bool
	}{
		{"escaped_a", `{"a":1,"\u0061":2}`, nil, true},
		{"escaped_upper_hex", `{"\u00e9":1,"\u00E9":2}`, nil, true},
		{"escaped_slash", `{"a/b":1,"a\/b":2}`, nil, true},
		{"pair_and_raw", `{"\ud83d\ude00":1,"😀":2}`, nil, true},
		{"lone_surrogate_is_fffd", `{"\ud800":1,"\ufffd":2}`, nil, true},
		{"kelvin_exact", `{"k":1,"\u212a":2}`, nil, false},
		{"kelvin_folded", `{"k":1,"\u212a":2}`, all, true},
		{"long_s_folded", `{"s":1,"\u017f":2}`, all, true},
		{"final_sigma_folded", `{"σ":1,"ς":2}`, all, true},
		{"sharp_s_not_ss", `{"ß":1,"SS":2}`, all, false},
		{"dotless_i_not_i", `{"ı":1,"I":2}`, all, false},
		{"dotted_I_not_i", `{"İ":1,"i":2}`, all, false},
		{"nested_escaped", `{"o":{"p":[{"q":1,"\u0071":2}]}}`, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, found := Member([]byte(tc.data), tc.fold); found != tc.found {
				t.Errorf("Member(%s) found = %v, want %v", tc.data, found, tc.found)
			}
		})
	}
}
