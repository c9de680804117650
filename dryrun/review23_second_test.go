package dryrun

import (
	"strings"
	"testing"
)

// TestReview23SummaryApostrophePairs: two ASCII apostrophes (or backticks)
// side by side read as a double quote: a name of body, two apostrophes,
// a comma, a space, two more and delete_all read as two names, "body",
// "delete_all".
func TestReview23SummaryApostrophePairs(t *testing.T) {
	for _, q := range []string{"''", "``", "'`"} {
		args := strings.ReplaceAll(`{"title":1,"body%s, %sdelete_all":2}`, "%s", q)
		if got := Summary("t", []byte(args)); strings.Contains(got, q) {
			t.Errorf("Summary(t, %s) = %s: %q shown bare inside quotes", args, got, q)
		}
	}
}

// TestReview23SummaryApostrophePairsEscaped: a name that also holds a
// character shown escaped (a zero-width space) is quoted with
// strconv.QuoteToASCII, which leaves apostrophes bare as well.
func TestReview23SummaryApostrophePairsEscaped(t *testing.T) {
	args := `{"title":1,"body'', ''delete_all\u200b":2}`
	if got := Summary("t", []byte(args)); strings.Contains(got, "''") {
		t.Errorf("Summary(t, %s) = %s: '' shown bare inside quotes", args, got)
	}
}
