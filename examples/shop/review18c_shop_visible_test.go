package main

import "testing"

// TestReview18cVisibleDropsDefaultIgnorable: the catalogue text a model
// reads loses the characters Unicode says are shown as nothing, letters
// and marks too (the Hangul fillers, the combining grapheme joiner, the
// unassigned tag block), as visible's doc and the README say; Hangul
// syllables, jamo and emoji with U+FE0F are kept.
func TestReview18cVisibleDropsDefaultIgnorable(t *testing.T) {
	for in, want := range map[string]string{
		"Robo\u3164Vacuum":             "RoboVacuum",
		"Robo\uffa0Vacuum":             "RoboVacuum",
		"Robo\u034fVac\u115f\u1160uum": "RoboVacuum",
		"Robo\U000e0080Vacuum":         "RoboVacuum",
		"로봇 \u1100\u1161 \u2764\ufe0f": "로봇 \u1100\u1161 \u2764\ufe0f",
		"two\nlines\tand a tab":        "two\nlines\tand a tab",
	} {
		if got := visible(in); got != want {
			t.Errorf("visible(%+q) = %+q, want %+q", in, got, want)
		}
	}
}
