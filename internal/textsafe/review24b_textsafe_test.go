package textsafe

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The word rule of ReadsASCIIIn left a word wholly in one other script
// bare when it held a letter of that script that is not in the table of
// lookalikes. But confusables.txt gives more letters of those scripts as
// shaped like ASCII than the table held: letters whose skeleton is an
// ASCII letter with marks (Cyrillic ё as ë, Greek ό as ó, η as n̩), two
// ASCII letters (ꚙ as oo, ӕ as ae, Ы as bl) or ASCII punctuation (Coptic
// Ⲻ as -, Cherokee Ꭾ as ?, Hebrew י as '). Such a letter made the word
// "visibly" of its script, so Сһӏоё (Cyrillic) read as Chloë, ѕсһꚙӏ as
// school and ⲞⲔⲺⲦⲞ (Coptic) as OK-TO. And letters of scripts without
// lookalikes shaped like ASCII punctuation (Katakana ノ and the ideograph
// 丿, a slash; Devanagari ॽ, a question mark) and Latin ones (the glottal
// stops ʔ Ɂ, a question mark; ŉ, 'n) were shown bare as letters: docsノx
// read as docs/x, "say whatʔ" as "say what?".

// TestReview24bReadsASCIIInShapedLetters: a letter shaped like ASCII with
// marks, like two ASCII letters or like ASCII punctuation is a lookalike to
// the word rule, never the letter that shows a word's script.
func TestReview24bReadsASCIIInShapedLetters(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"Сһӏоё", true}, {"Νό", true}, {"ѕсһꚙӏ", true}, {"сӕѕаг", true}, {"ⲞⲔⲺⲦⲞ", true},
		{"ᎪᏟᎷᎬᎮ", true}, {"ηο", true}, {"ТАЫЕ", true}, {"Ёж", false},
		{"Москва", false}, {"λόγος", false}, {"Шереметьево", false}, {"ёлка", false},
		{"Привет", false}, {"שלום", false}, {"θεός", false},
	} {
		if got := ReadsASCIIIn(tc.s); got != tc.want {
			t.Errorf("ReadsASCIIIn(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
	for _, tc := range []struct{ s, want string }{
		{"Сһӏоё", `"\u0421\u04bb\u04cf\u043e\u0451"`},
		{"ѕсһꚙӏ", `"\u0455\u0441\u04bb\ua699\u04cf"`},
		{"ⲞⲔⲺⲦⲞ", `"\u2c9e\u2c94\u2cba\u2ca6\u2c9e"`},
		{"Ёж", `"Ёж"`},
	} {
		if got := QuoteASCIIShaped(tc.s); got != tc.want {
			t.Errorf("QuoteASCIIShaped(%q) = %s, want %s", tc.s, got, tc.want)
		}
	}
}

// TestReview24bWordPunctuationLetters: letters of scripts without
// lookalikes, and Latin ones, that confusables.txt gives as ASCII
// punctuation (ʔ and Ɂ as ?, ŉ as 'n) are not shown bare.
func TestReview24bWordPunctuationLetters(t *testing.T) {
	for _, s := range []string{"docsノx", "a丿b", "a丶b", "whatॽ", "whatʔ", "WHATɁ", "rockŉ"} {
		if Word(s) {
			t.Errorf("Word(%q): true", s)
		}
		if q := QuoteShaped(s); !strings.Contains(q, `\u`) {
			t.Errorf("QuoteShaped(%q) = %s: not escaped", s, q)
		}
	}
	for _, s := range []string{"東京タワ", "Tシャツ", "Москва"} {
		if !Word(s) {
			t.Errorf("Word(%q): false", s)
		}
	}
}

// TestReview24bShapedTable checks the second generated table: sorted,
// letters outside ASCII and Latin, not modifier letters (QuoteShaped
// escapes those), in their script, not in lookalikes, and read as ASCII
// once marks are dropped.
func TestReview24bShapedTable(t *testing.T) {
	for i, e := range asciiShaped {
		if i > 0 && asciiShaped[i-1].r >= e.r {
			t.Errorf("not sorted at %U", e.r)
		}
		if !unicode.IsLetter(e.r) || unicode.In(e.r, unicode.Latin, unicode.Lm) {
			t.Errorf("%U %c: not a letter of another script", e.r, e.r)
		}
		if e.script == 0 || int(e.script) >= len(lookalikeScripts) || !unicode.Is(lookalikeScripts[e.script], e.r) {
			t.Errorf("%U %c: wrong script %d", e.r, e.r, e.script)
		}
		if _, ok := LooksLike(e.r); ok {
			t.Errorf("%U %c: in lookalikes too", e.r, e.r)
		}
		if got, ok := ReadsLike(e.r); !ok || got != e.reads {
			t.Errorf("ReadsLike(%c) = %q, %v", e.r, got, ok)
		}
		// ASCII, with marks, some composed with their letter (ë).
		other := func(r rune) bool {
			return r >= utf8.RuneSelf && !unicode.In(r, unicode.M, unicode.Latin)
		}
		if e.reads == "" || strings.ContainsFunc(e.reads, other) || unicode.Is(unicode.M, []rune(e.reads)[0]) {
			t.Errorf("%U %c: %q does not read as ASCII", e.r, e.r, e.reads)
		}
	}
	for _, c := range []string{"ёë", "όó", "ꚙoo", "ӕae", "Ыbl", "Ⲻ-", "Ꭾ?", "י'", "ηn\u0329"} {
		r, n := utf8.DecodeRuneInString(c)
		if got, ok := ReadsLike(r); !ok || got != c[n:] {
			t.Errorf("ReadsLike(%c) = %q, %v; want %q", r, got, ok, c[n:])
		}
	}
	for _, r := range "жъλшаaé" {
		if got, ok := ReadsLike(r); ok {
			t.Errorf("ReadsLike(%c) = %q", r, got)
		}
	}
}
