package confirm

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestReview23DescribeApostrophePairs: two ASCII apostrophes (or
// backticks) side by side read as a double quote, and strconv.Quote and
// JSON leave them bare: a note of ok, two apostrophes, ", amount=1, z"
// and two more read as note="ok", amount=1, z"", and an item whose note
// ended in the same shapes around qty read as [{"note":"gift","qty":1}] with the real "qty":1000 cut
// off past 80 characters.
func TestReview23DescribeApostrophePairs(t *testing.T) {
	for _, q := range []string{"''", "``", "'`"} {
		for _, tmpl := range []string{
			`{"note":"ok%s, amount=1, z%s"}`,
			`{"note%s=1, amount%s":1000}`,
			`{"items":[{"note":"gift%s,%sqty%s:1}]` + strings.Repeat(" ", 60) + `","qty":1000}]}`,
			`[{"note":"ok%s, amount=1, z%s"}]`,
		} {
			args := strings.ReplaceAll(tmpl, "%s", q)
			if got := Describe("refund", json.RawMessage(args)); strings.Contains(got, q) {
				t.Errorf("Describe(%s)\n= %s\nshows %q bare", args, got, q)
			}
		}
	}
	// One apostrophe stays as it is.
	if got, want := Describe("t", json.RawMessage(`{"note":"don't","v":["it's"]}`)), `Run t with note="don't", v=["it's"]`; got != want {
		t.Errorf("Describe = %s, want %s", got, want)
	}
}

// TestReview23DescribeLiteralWithControl: a string spelling a number or a
// literal but for JSON white space ("1\t", "true\n") was quoted with its
// control characters removed, so it read exactly as the string "1" or
// "true"; the doc says a string holding control characters is shown with
// them escaped.
func TestReview23DescribeLiteralWithControl(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{`{"amount":"1\t"}`, `Run t with amount="1\t"`},
		{`{"ok":"true\r\n"}`, `Run t with ok="true\r\n"`},
		{`{"amount":"1"}`, `Run t with amount="1"`},
	} {
		if got := Describe("t", json.RawMessage(tc.args)); got != tc.want {
			t.Errorf("Describe(%s)\n got %s\nwant %s", tc.args, got, tc.want)
		}
	}
}

// TestReview23DescribeApostrophePairsEscaped: a string that also holds a
// character shown escaped (a zero-width space) is quoted with
// strconv.QuoteToASCII, which leaves apostrophes bare as well.
func TestReview23DescribeApostrophePairsEscaped(t *testing.T) {
	for _, args := range []string{
		`{"note":"ok'', amount=1, z''\u200b"}`,
		`{"note'', amount''\u200b":1000}`,
	} {
		if got := Describe("refund", json.RawMessage(args)); strings.Contains(got, "''") {
			t.Errorf("Describe(%s)\n= %s\nshows '' bare", args, got)
		}
	}
}
