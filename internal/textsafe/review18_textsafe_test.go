package textsafe

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestReview18DefaultIgnorable: characters that Unicode says a renderer
// shows as nothing (Default_Ignorable_Code_Point) but that are neither Cf
// nor the supplementary variation selectors: the Hangul fillers (the
// "invisible identifier" of published attacks), the combining grapheme
// joiner, the Khmer inherent vowels, and the unassigned code points of the
// tag block, which can spell hidden text as the tag characters can. The
// variation selectors U+FE00-U+FE0F are kept: emoji need U+FE0F.
func TestReview18DefaultIgnorable(t *testing.T) {
	for _, r := range []rune{0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2065, 0x3164, 0xFFA0, 0xFFF0, 0xFFF8,
		0xE0000, 0xE0002, 0xE001F, 0xE0080, 0xE00FF, 0xE01F0, 0xE0FFF} {
		s := "del" + string(r) + "ete"
		if got := Clean(s, 100); got != "delete" {
			t.Errorf("Clean(%q) = %q, want %q", s, got, "delete")
		}
		if got := CleanLines(s, 100); got != "delete" {
			t.Errorf("CleanLines(%q) = %q, want %q", s, got, "delete")
		}
		if Plain(s) {
			t.Errorf("Plain(%q) = true, want false", s)
		}
	}
	for _, s := range []string{"\u2764\ufe0f", "\u00e9", "\u1100\u1161", "\uac00", "\u3163", "\uffa1"} {
		if got := Clean(s, 100); got != s || !Plain(s) {
			t.Errorf("Clean(%q) = %q, Plain %v; want it kept", s, got, Plain(s))
		}
	}
}

// TestReview18PlainIsClean: Plain(s) is exactly Clean(s) == s, on random
// strings of edge characters and bytes.
func TestReview18PlainIsClean(t *testing.T) {
	pieces := []string{"a", "Z", " ", "\t", "\n", "\r", "\x00", "\x1f", "\x7f", "\u0080", "\u009f", "\u00a0",
		"\u00ad", "\u034f", "\u061c", "\u200b", "\u200d", "\u200e", "\u202e", "\u2028", "\u2029", "\u2066",
		"\u3164", "\ufe0f", "\ufeff", "\ufffd", "\uffff", "\U000e0041", "\U000e0080", "\U000e0100",
		"\U0010ffff", "\xff", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x82", "\xf4\x90\x80\x80", "é", "😀", "ſ", "K"}
	rng := rand.New(rand.NewPCG(18, 18))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(6) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		if got, want := Plain(s), Clean(s, math.MaxInt) == s; got != want {
			t.Fatalf("Plain(%q) = %v, but Clean gives %q", s, got, Clean(s, math.MaxInt))
		}
		if c := Clean(s, math.MaxInt); !utf8.ValidString(c) || !Plain(c) {
			t.Fatalf("Clean(%q) = %q, not plain", s, c)
		}
	}
}

// TestReview18CutNeverPanics: CutBytes and Quoted take any maxBytes (a
// negative one as 0), and cut at a character boundary whatever the text.
func TestReview18CutNeverPanics(t *testing.T) {
	for _, tc := range []struct {
		s    string
		max  int
		cut  string
		more bool
	}{
		{"abc", -1, "", true},
		{"abc", math.MinInt, "", true},
		{"", -1, "", false},
		{"abc", 0, "", true},
		{"é", 1, "", true},
		{"a€", 2, "a", true},
		{"a€", 3, "a", true},
		{"a€", 4, "a€", false},
		{"😀", 3, "", true},
		{"\x80\x80\x80\x80\x80", 4, "\x80", true}, // no start byte: at most three back
	} {
		cut, more := CutBytes(tc.s, tc.max)
		if cut != tc.cut || more != tc.more {
			t.Errorf("CutBytes(%q, %d) = %q, %v; want %q, %v", tc.s, tc.max, cut, more, tc.cut, tc.more)
		}
	}
	if got := Quoted("abc", -5); got != `""...` {
		t.Errorf(`Quoted("abc", -5) = %s, want ""...`, got)
	}
}

// TestReview18JSONReplacedTruncated: on text that breaks off inside an
// escape (not valid JSON: callers check that first), JSONReplaced answers
// true, failing closed, rather than panicking.
func TestReview18JSONReplacedTruncated(t *testing.T) {
	for _, in := range []string{`"\`, `"\u`, `"\u12`, `"\ud83d\`, `"\ud83d\u`, `"\ud83d\ude0`} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("JSONReplaced(%s) panicked: %v", in, p)
				}
			}()
			if !JSONReplaced([]byte(in)) {
				t.Errorf("JSONReplaced(%s) = false, want true", in)
			}
		}()
	}
	for in, want := range map[string]bool{
		`"\u2028\u2029"`:       false,
		`"\u0000"`:             false,
		`"\uDBFF\uDFFF"`:       false,
		`"\udBfF\uDfFf"`:       false,
		`"\ud800\\udc00"`:      true,
		`"\ud800\ud800\udc00"`: true,
		"\"\xed\xa0\x80\"":     true,
		"\"\xc0\xaf\"":         true,
	} {
		if got := JSONReplaced([]byte(in)); got != want {
			t.Errorf("JSONReplaced(%s) = %v, want %v", in, got, want)
		}
	}
}

// TestReview18Linear: Clean, Plain and JSONReplaced on 4 MiB stay well
// within a second (each is one pass).
func TestReview18Linear(t *testing.T) {
	big := strings.Repeat("a\u202e\u3164😀\xff", 1<<20/4)
	esc := []byte(`"` + strings.Repeat(`\ud83d\ude00`, 1<<20/12) + `"`)
	_ = Clean(big, math.MaxInt)
	_ = Plain(big)
	if JSONReplaced(esc) {
		t.Fatal("JSONReplaced(pairs) = true")
	}
}
