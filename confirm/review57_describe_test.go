package confirm

import (
	"encoding/json"
	"strings"
	"testing"
)

// A nested value is judged for letters that read as ASCII in what is
// shown of it. Two apostrophes in a row are escaped (\u0027\u0027), which
// makes the text longer and moves the 80-character cut earlier: the check
// must look at that cut, not at the one before the escapes, where a
// Cyrillic word of lookalikes still held its letter of its own script (ж)
// and so was left bare, to be shown cut as "сорсор…", which reads as
// "copcop…".
func TestReview57NestedCutAfterQuotePairs(t *testing.T) {
	for n := 40; n < 70; n++ {
		args := `{"k":["''` + strings.Repeat("x", n) + ` сорсорсорсорсорж"]}`
		got := Describe("t", json.RawMessage(args))
		if strings.Contains(got, "с") && !strings.Contains(got, "ж") {
			t.Fatalf("filler %d: Describe shows a cut word of Cyrillic lookalikes bare, "+
				"which reads as ASCII: %s", n, got)
		}
	}
}
