package textsafe

import (
	"strings"
	"testing"
)

// TestReview22cLetterQuotes: letters outside the modifier letters that
// read as a quote or an apostrophe: the Yiddish double yod ײ (Unicode's
// confusables.txt maps it to " as it maps the gershayim ״, which
// QuoteShaped escapes), the Canadian syllabics finals ᐦ (two short
// vertical strokes) and ᐥ (a double acute), and the apostrophes ᑊ
// (West-Cree P) and ᛌ (runic short-twig-sol, both ' in confusables.txt).
// Being letters (Lo), Word showed them bare and QuoteShaped inside its
// quotes: "okײ, amount=1, zײ" read as "ok", amount=1, z"".
func TestReview22cLetterQuotes(t *testing.T) {
	for _, q := range []string{"\u05f2", "\u1426", "\u1425", "\u144a", "\u16cc"} {
		if s := "ok" + q; Word(s) {
			t.Errorf("Word(%+q) = true, want false", s)
		}
		in := "ok" + q + ", amount=1, z" + q
		if got := QuoteShaped(in); strings.Contains(got, q) {
			t.Errorf("QuoteShaped(%+q) = %s: %+q shown unescaped", in, got, q)
		}
	}
	// Hebrew and Canadian syllabics words stay readable.
	for _, s := range []string{"שלום", "ᐊᓂᔑᓈᐯᒧᐎᓐ"} {
		if !Word(s) {
			t.Errorf("Word(%q) = false, want true", s)
		}
	}
}
