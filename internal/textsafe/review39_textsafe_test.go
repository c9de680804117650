package textsafe

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestReview39WordRule pins the word rule of ReadsASCIIIn and
// QuoteASCIIShaped at the places a sweep found untested: what makes a word
// hold Latin letters (an ASCII digit or z, a Latin letter outside ASCII such
// as ß or the lookalike ı), the first script of the table (Ahom), a word of
// only lookalikes and letters shaped like ASCII, letters of scripts with no
// lookalikes (Han) beside a lookalike, and the letters the rule leaves bare.
// A consent prompt shows these quoted forms to a person who must not read
// a lookalike as the ASCII it imitates, nor see a plain word made
// unreadable.
func TestReview39WordRule(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		quote string // QuoteASCIIShaped(in)
		reads bool   // ReadsASCIIIn(in)
	}{
		// In a word with an ASCII letter or digit, or another Latin
		// letter, every letter of a script with lookalikes is escaped,
		// lookalike or not (Ж has no ASCII shape and no twin).
		{"ascii_digit_then_cyrillic", "0Ж", `"0\u0416"`, true},
		{"ascii_z_then_cyrillic", "zЖ", `"z\u0416"`, true},
		{"latin_sharp_s_then_cyrillic", "ßЖ", `"ß\u0416"`, true},
		{"latin_lookalike_then_greek", "ıΓ", `"\u0131\u0393"`, true},
		{"ascii_then_ahom_lookalike", "z\U00011700", `"z\U00011700"`, true},
		{"ascii_digit_then_ahom_letter", "0\U00011701", `"0\U00011701"`, true},
		// The Latin letters themselves: ß is no lookalike and stays bare,
		// ı reads as i and is always escaped; Han has no lookalikes, so 中
		// stays bare beside a Latin lookalike.
		{"latin_sharp_s_then_dotless_i", "ßı", `"ß\u0131"`, true},
		{"latin_sharp_s_then_greek_alpha", "ßΑ", `"ß\u0391"`, true},
		{"dotless_i_then_han", "ı中", `"\u0131中"`, true},
		// A word wholly of letters that read as ASCII (Б reads as b with
		// a macron, ш as w) reads as an ASCII word in any script.
		{"cyrillic_letters_reading_as_ascii", "Бш", `"\u0411\u0448"`, true},
		// Beside a Han letter, a Greek Α reads as the A of a word in Han
		// and ASCII.
		{"han_then_greek_lookalike", "中Α", `"中\u0391"`, true},
		// Beside letters of another script the lookalike (Α) is escaped,
		// a letter with no twin anywhere (Ж) is not.
		{"greek_lookalike_then_cyrillic", "ΑЖ", `"\u0391Ж"`, true},
		// A word wholly in one other script is bare only when no other
		// script spells it alike letter for letter: Greek Ͱ has twins in
		// other scripts, Ahom 𑜁 has none (so 𑜀𑜁 is bare though 𑜀 alone
		// reads as rn).
		{"greek_heta_alone", "Ͱ", `"\u0370"`, true},
		{"ascii_then_greek_heta", "zͰ", `"z\u0370"`, true},
		{"ahom_word_without_twin", "\U00011700\U00011701", `"` + "\U00011700\U00011701" + `"`, false},
		// DEL is a control character: escaped as strconv.Quote does.
		{"delete", "\x7f", `"\x7f"`, false},
		{"delete_in_a_word", "a\x7fb", `"a\x7fb"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := QuoteASCIIShaped(tt.in); got != tt.quote {
				t.Errorf("QuoteASCIIShaped(%+q) = %s, want %s", tt.in, got, tt.quote)
			}
			if got := ReadsASCIIIn(tt.in); got != tt.reads {
				t.Errorf("ReadsASCIIIn(%+q) = %v, want %v", tt.in, got, tt.reads)
			}
		})
	}
}

// TestReview39ShapedC1 pins that the first character outside ASCII, the C1
// control U+0080, is shaped (escaped by QuoteShaped): it shows as nothing.
func TestReview39ShapedC1(t *testing.T) {
	for _, tt := range []struct {
		r    rune
		want bool
	}{{0x7f, false}, {0x80, true}, {0x9f, true}, {'é', false}} {
		if got := Shaped(tt.r); got != tt.want {
			t.Errorf("Shaped(%U) = %v, want %v", tt.r, got, tt.want)
		}
	}
}

// TestReview39CutBytesInvalidUTF8 pins that CutBytes on text that is not
// UTF-8 (continuation bytes from the start, as a client may send) returns
// a prefix of at most maxBytes bytes and no panic: it backs up at most
// three bytes and never before the start.
func TestReview39CutBytesInvalidUTF8(t *testing.T) {
	for _, s := range []string{"\x80\x80\x80\x80", "\x80\x80", "a\x80\x80\x80\x80", "\xbf\xbf\xbf\xbf\xbf"} {
		for maxBytes := 0; maxBytes < len(s); maxBytes++ {
			cut, more := CutBytes(s, maxBytes)
			if !more || len(cut) > maxBytes || !strings.HasPrefix(s, cut) {
				t.Errorf("CutBytes(%+q, %d) = %+q, %v, want a prefix of at most %d bytes, true",
					s, maxBytes, cut, more, maxBytes)
			}
		}
	}
}

// TestReview39ASCIIJSONPlaneEdges pins ASCIIJSON at the edge of the Basic
// Multilingual Plane: U+FFFF is one escape, U+10000 and U+10FFFF a
// surrogate pair, and a JSON reader reads each as the character it was.
func TestReview39ASCIIJSONPlaneEdges(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"\ufffd", `\ufffd`},
		{"\uffff", `\uffff`},
		{"\U00010000", `\ud800\udc00`},
		{"\U0010ffff", `\udbff\udfff`},
	} {
		got := ASCIIJSON(`"` + tt.in + `"`)
		if want := `"` + tt.want + `"`; got != want {
			t.Errorf("ASCIIJSON(%+q) = %s, want %s", `"`+tt.in+`"`, got, want)
		}
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil || back != tt.in || !utf8.ValidString(back) {
			t.Errorf("encoding/json reads ASCIIJSON's %s as %+q (%v), want %+q", got, back, err, tt.in)
		}
	}
}
