package textsafe

import (
	"strings"
	"testing"
)

// TestReview23QuoteShapedApostrophePairs: two ASCII apostrophes side by
// side read as a double quote (Unicode's confusables.txt gives two
// apostrophes as the skeleton of "), and so do two backticks or one of
// each; strconv.Quote leaves both bare, so a note ending in two, then
// ", amount=1, z" and two more, read as "ok", then more of the prompt. A run of two or more is escaped; a lone apostrophe (don't)
// stays readable.
func TestReview23QuoteShapedApostrophePairs(t *testing.T) {
	for _, q := range []string{"''", "``", "'`", "`'", "'''"} {
		in := "ok" + q + ", amount=1, z" + q
		got := QuoteShaped(in)
		if strings.Contains(got, "''") || strings.Contains(got, "``") || strings.Contains(got, "'`") || strings.Contains(got, "`'") {
			t.Errorf("QuoteShaped(%q) = %s: a pair of apostrophes shown bare", in, got)
		}
	}
	for in, want := range map[string]string{
		"don't":     `"don't"`,
		"it's `go`": "\"it's `go`\"",
		"a''b":      `"a\u0027\u0027b"`,
		"a``b":      `"a\u0060\u0060b"`,
	} {
		if got := QuoteShaped(in); got != want {
			t.Errorf("QuoteShaped(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestReview23QuotePairsJSON: QuotePairs escapes the same runs in JSON
// text, where an apostrophe or a backtick is only ever inside a string.
func TestReview23QuotePairsJSON(t *testing.T) {
	for in, want := range map[string]string{
		`[{"note":"gift'',''qty'':1}]"}]`: `[{"note":"gift\u0027\u0027,\u0027\u0027qty\u0027\u0027:1}]"}]`,
		`{"note":"don't"}`:                `{"note":"don't"}`,
	} {
		if got := QuotePairs(in); got != want {
			t.Errorf("QuotePairs(%s) = %s, want %s", in, got, want)
		}
	}
}
