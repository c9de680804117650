package textsafe

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// review38Replaced reports, by encoding/json itself, whether it reads raw
// (valid JSON) with a U+FFFD that raw does not spell: the decoded strings,
// member names included, hold more U+FFFD than raw writes as the
// character or as its escape.
func review38Replaced(t *testing.T, raw string) bool {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatalf("the test's text %s is not JSON: %v", raw, err)
	}
	var count func(any) int
	count = func(v any) int {
		switch v := v.(type) {
		case string:
			return strings.Count(v, "\ufffd")
		case []any:
			n := 0
			for _, e := range v {
				n += count(e)
			}
			return n
		case map[string]any:
			n := 0
			for k, e := range v {
				n += strings.Count(k, "\ufffd") + count(e)
			}
			return n
		}
		return 0
	}
	spelt := strings.Count(raw, "\ufffd") + strings.Count(strings.ToLower(raw), `\ufffd`)
	return count(v) > spelt
}

// TestReview38JSONReplacedAgainstEncodingJSON pins JSONReplaced against
// encoding/json on every escaped UTF-16 unit at the edges of the
// surrogate ranges, alone, as the first half of a pair with every such
// second unit, and as the second one, in lower- and upper-case hex, in a
// string and in a member name, and at the end of the text. What it misses
// is text a Go handler reads as U+FFFD and a JavaScript one otherwise:
// arguments that a confirmation or a validator saw as one thing and the
// tool as another.
func TestReview38JSONReplacedAgainstEncodingJSON(t *testing.T) {
	units := []rune{0x0041, 0x0fff, 0x9fff, 0xd7ff, 0xd800, 0xd801, 0xdbfe, 0xdbff, 0xdc00, 0xdc01, 0xdffe, 0xdfff, 0xe000, 0xe001, 0xfffd, 0xffff}
	esc := func(r rune, upper bool) string {
		if upper {
			return fmt.Sprintf(`\u%04X`, r)
		}
		return fmt.Sprintf(`\u%04x`, r)
	}
	check := func(raw string) {
		t.Helper()
		if got, want := JSONReplaced([]byte(raw)), review38Replaced(t, raw); got != want {
			t.Errorf("JSONReplaced(%s) = %v, want %v (encoding/json)", raw, got, want)
		}
	}
	for _, upper := range []bool{false, true} {
		for _, a := range units {
			one := esc(a, upper)
			check(`"` + one + `"`)
			check(`{"` + one + `":1}`)
			check(`["x","` + one + `y"]`)
			for _, b := range units {
				two := one + esc(b, upper)
				check(`"` + two + `"`)
				check(`{"k":"` + two + `"}`)
				check(`"` + one + `\n` + esc(b, upper) + `"`)
			}
		}
	}
}

// TestReview38JSONReplacedEveryHexDigit pins hex4 on every hex digit in
// both cases, through JSONReplaced: a pair whose units are spelt with
// each digit in each place is a pair, and a lone unit is not.
func TestReview38JSONReplacedEveryHexDigit(t *testing.T) {
	for _, d := range "0123456789abcdefABCDEF" {
		hi, lo := `\uD8`+string(d)+`0`, `\uDC`+string(d)+`0`
		if JSONReplaced([]byte(`"` + hi + lo + `"`)) {
			t.Errorf("JSONReplaced(%q) = true, want false: a surrogate pair", hi+lo)
		}
		if !JSONReplaced([]byte(`"` + hi + `"`)) {
			t.Errorf("JSONReplaced(%q) = false, want true: a lone surrogate", hi)
		}
		if v := `\u00` + string(d) + `0`; JSONReplaced([]byte(`"` + v + `"`)) {
			t.Errorf("JSONReplaced(%q) = true, want false", v)
		}
	}
}

// TestReview38JSONReplacedEveryDigitInPlace pins hex4 on every hex digit,
// in both cases, in the place that decides whether a unit is a surrogate
// and which half (the second: D0-D7 none, D8-DB first, DC-DF second), alone
// and in every pair, against encoding/json.
func TestReview38JSONReplacedEveryDigitInPlace(t *testing.T) {
	const digits = "0123456789abcdefABCDEF"
	for _, a := range digits {
		one := `\uD` + string(a) + `00`
		raw := `"` + one + `"`
		if got, want := JSONReplaced([]byte(raw)), review38Replaced(t, raw); got != want {
			t.Errorf("JSONReplaced(%s) = %v, want %v (encoding/json)", raw, got, want)
		}
		for _, b := range digits {
			raw := `"` + one + `\uD` + string(b) + `00"`
			if got, want := JSONReplaced([]byte(raw)), review38Replaced(t, raw); got != want {
				t.Errorf("JSONReplaced(%s) = %v, want %v (encoding/json)", raw, got, want)
			}
		}
	}
}

// TestReview38QuotePairs pins QuotePairs on quoted text: every apostrophe
// or backtick beside another is escaped, wherever the run is and however
// long, and a lone one is left as it is, as is text without a pair; two
// in a row would read as a double quote ending the quoted text early.
func TestReview38QuotePairs(t *testing.T) {
	for in, want := range map[string]string{
		`"ok"`:          `"ok"`,
		`"it's"`:        `"it's"`,
		`"it''s"`:       `"it\u0027\u0027s"`,
		"\"a``b\"":      `"a\u0060\u0060b"`,
		"\"a'`b\"":      `"a\u0027\u0060b"`,
		`"'''"`:         `"\u0027\u0027\u0027"`,
		`"x' y''z ' "`:  `"x' y\u0027\u0027z ' "`,
		`"a''b'c''d"`:   `"a\u0027\u0027b'c\u0027\u0027d"`,
		`"ends with''"`: `"ends with\u0027\u0027"`,
	} {
		if got := QuotePairs(in); got != want {
			t.Errorf("QuotePairs(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestReview38WordAndHiddenEdges pins a few single characters at the ends
// of Word's and Clean's lists: the empty string is no word (a name shown
// bare as nothing reads as no name at all), the saltillo letters Ꞌ ꞌ (an
// apostrophe's shape) are no word while the Latin letter Ǆ next to the
// click letters is, and Clean drops the Mongolian free variation selector
// four (U+180F) but keeps the Mongolian digit zero after it.
func TestReview38WordAndHiddenEdges(t *testing.T) {
	for s, want := range map[string]bool{"": false, "\ua78b": false, "\ua78c": false, "\u01c3": false, "\u01c4": true, "a": true} {
		if got := Word(s); got != want {
			t.Errorf("Word(%+q) = %v, want %v", s, got, want)
		}
	}
	if got, want := Clean("a\u180fb\u1810", 64), "ab\u1810"; got != want {
		t.Errorf("Clean(%+q) = %+q, want %+q", "a\u180fb\u1810", got, want)
	}
}

// TestReview38ReadsASCIIRangeEnds pins ReadsASCII at both ends of each of
// its ranges and beside each of its single characters: the first and last
// of a range read as ASCII, the character past either end (a symbol, a
// letter of its own, or unassigned) does not, unless it is a decimal digit
// of another script. A range one short leaves a fullwidth ～ or a
// monospace 𝟿 unescaped in a consent prompt, where it reads as ~ or 9.
func TestReview38ReadsASCIIRangeEnds(t *testing.T) {
	for r, want := range map[rune]bool{
		0xFF00: false, 0xFF01: true, 0xFF5E: true, 0xFF5F: false,
		0x1D3FF: false, 0x1D400: true, 0x1D7FF: true, 0x1D800: false,
		0xA9: false, 0xAA: true, 0xAB: false, 0xB9: false, 0xBA: true, 0xBB: false,
		0x17E: false, 0x17F: true, 0x180: false,
		0x131: false, 0x132: true, 0x133: true, 0x134: false,
		0x1C6: false, 0x1C7: true, 0x1CC: true, 0x1CD: false,
		0x1F0: false, 0x1F1: true, 0x1F3: true, 0x1F4: false,
		0xFAFF: false, 0xFB00: true, 0xFB06: true, 0xFB07: false,
		0x2100: false, 0x2102: true, 0x214E: true, 0x214F: false, 0x2150: false,
		0x0660: true, 0x0966: true, 0x00B2: false,
	} {
		if got := ReadsASCII(r); got != want {
			t.Errorf("ReadsASCII(%U %q) = %v, want %v", r, r, got, want)
		}
	}
}
