package textsafe

import (
	"math"
	"testing"
)

// TestReview18cNegativeMaxRunes: Clean and CleanLines take a negative
// maxRunes as 0, as CutBytes and Quoted take a negative maxBytes: the
// text is cut at once, never returned whole. Before, a negative bound was
// never reached, and Clean returned all of the text, however long.
func TestReview18cNegativeMaxRunes(t *testing.T) {
	for _, max := range []int{-1, -80, math.MinInt} {
		for _, tc := range []struct{ in, want string }{
			{"abc", "…"},
			{"", ""},
			{"\u200b\u3164", ""}, // nothing visible: nothing to cut
		} {
			if got := Clean(tc.in, max); got != tc.want {
				t.Errorf("Clean(%q, %d) = %q, want %q", tc.in, max, got, tc.want)
			}
			if got := CleanLines(tc.in, max); got != tc.want {
				t.Errorf("CleanLines(%q, %d) = %q, want %q", tc.in, max, got, tc.want)
			}
		}
	}
	if got, want := Clean("abc", 0), "…"; got != want {
		t.Errorf("Clean(%q, 0) = %q, want %q", "abc", got, want)
	}
}
