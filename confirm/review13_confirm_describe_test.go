package confirm

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDescribeLongNumberKeepsItsValue: a number is cut like any value
// longer than 80 characters, and the cut took its exponent away:
// 1.000…e3 (a thousand, accepted by a schema's "maximum": 1000) read as
// "amount=1.000000…", one. A number too long to show whole is shown by its
// value, rounded and marked so.
func TestDescribeLongNumberKeepsItsValue(t *testing.T) {
	zeros := strings.Repeat("0", 90)
	for _, tc := range []struct{ args, want string }{
		{`{"amount":1.` + zeros + `e3}`, "Run refund with amount=≈1000"},
		{`{"amount":1` + zeros + `}`, "Run refund with amount=≈1e+90"},
		{`{"amount":-0.` + zeros + `1}`, "Run refund with amount=≈-1e-91"},
		{`{"amount":1.` + zeros + `e99999999999}`, "Run refund with amount=(a number of 104 characters)"},
		{`{"amount":12.50}`, "Run refund with amount=12.50"}, // short: exactly as sent
	} {
		if got := Describe("refund", json.RawMessage(tc.args)); got != tc.want {
			t.Errorf("Describe(%.40s…)\n got %q\nwant %q", tc.args, got, tc.want)
		}
	}
}

// TestDescribeShowsInvisibleLetters: characters that render as nothing but
// are not control or formatting characters (Hangul fillers, which are
// letters, the combining grapheme joiner, variation selectors) and spaces
// other than U+0020 passed through, bare or inside quotes: target=db-1ㅤ
// read as target=db-1. They are escaped, as controls are, so that two
// different texts never read the same.
func TestDescribeShowsInvisibleLetters(t *testing.T) {
	for _, inv := range []string{"\u3164", "\u115f", "\u1160", "\uffa0", "\u034f", "\ufe0f", "\U000e0100", "\u180b", "\u00a0", "\u2009", "\u3000", "\u2800"} {
		for _, tmpl := range []string{`{"target":"db-1%s"}`, `{"target%s":"db-1"}`, `{"target":["db-1%s"]}`} {
			args := strings.Replace(tmpl, "%s", inv, 1)
			clean := strings.Replace(tmpl, "%s", "", 1)
			got := Describe("wipe", json.RawMessage(args))
			if got == Describe("wipe", json.RawMessage(clean)) || strings.Contains(got, inv) {
				t.Errorf("Describe(%+q) = %q: %U is shown as is", args, got, []rune(inv)[0])
			}
		}
	}
}
