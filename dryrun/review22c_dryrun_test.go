package dryrun

import (
	"strings"
	"testing"
)

// TestReview22cSummaryLetterQuotes: a name holding a letter shaped like a
// quote (the Yiddish double yod ײ, the Canadian syllabics finals ᐦ and ᐥ)
// was shown as it is inside its quotes: "bodyײ, ײdelete_all" read as two
// names, "body", "delete_all".
func TestReview22cSummaryLetterQuotes(t *testing.T) {
	for _, q := range []string{"\u05f2", "\u1426", "\u1425"} {
		args := strings.ReplaceAll(`{"title":1,"body%s, %sdelete_all":2}`, "%s", q)
		if got := Summary("t", []byte(args)); strings.Contains(got, q) {
			t.Errorf("Summary(t, %s) = %s: %+q shown unescaped inside quotes", args, got, q)
		}
	}
}
