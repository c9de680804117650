package dryrun

import (
	"strings"
	"testing"
)

// TestReview22SummaryQuoteLookalikes: a name that is not a plain word is
// quoted with strconv.Quote, which escapes only the ASCII quote and
// backslash, so a name holding characters shaped like a quote (ʺ U+02BA,
// ＂, ״, ″, “ ”) closed its quotes to the eye: "bodyʺ, ʺdelete_all"
// read as two names, "body", "delete_all". Inside quotes, a character
// outside ASCII that is not a letter or digit is now escaped.
func TestReview22SummaryQuoteLookalikes(t *testing.T) {
	for _, q := range []string{"ʺ", "＂", "״", "″", "“", "”", "❞", "˝"} {
		args := strings.ReplaceAll(`{"title":1,"body%s, %sdelete_all":2}`, "%s", q)
		got := Summary("t", []byte(args))
		if strings.Contains(got, q) {
			t.Errorf("Summary(t, %s) = %s: %+q shown unescaped inside quotes", args, got, q)
		}
	}
	// Letters in any script stay readable.
	if got, want := Summary("t", []byte(`{"próxima entrega":1}`)), `Would run t with arguments: "próxima entrega"`; got != want {
		t.Errorf("Summary = %s, want %s", got, want)
	}
}
