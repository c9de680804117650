// Package readfold folds text as a person reads it, for the tests of what
// the library shows people (the consent prompt, the dry-run preview): two
// texts that fold alike read alike.
package readfold

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard/internal/textsafe"
)

// letterlike are the letters whose compatibility form (NFKC) is an ASCII
// letter outside the fullwidth and mathematical blocks (the mathematical
// letters the Letterlike Symbols block holds, the ordinal indicators, the
// long s, the Kelvin sign); letterlikeASCII, that form of each.
const (
	letterlike      = "\u00aa\u00ba\u017fℂℊℋℌℍℎℐℑℒℓℕℙℚℛℜℝℤℨKℬℭℯℰℱℳℴℹⅅⅆⅇⅈⅉ"
	letterlikeASCII = "aosCgHHHhIILlNPQRRRZZKBCeEFMoiDdeij"
)

// Fold maps, one character for one, what a person reads as ASCII
// punctuation, digits or letters to them: the compatibility forms (NFKC)
// of ASCII (fullwidth forms, mathematical digits and letters, the
// letterlike ones), the digits of other scripts, the letters (of other
// scripts, and Latin ones) that Unicode's confusables.txt gives as shaped
// like an ASCII letter or digit (Cyrillic а, Greek Ο, Armenian օ, Cherokee
// Ꭺ, Latin ı: textsafe.LooksLike), wherever they stand, and so the
// letters it gives as one ASCII character, or one Latin letter, with its
// marks (Coptic Ⲻ as -, Cyrillic ё as ë: textsafe.ReadsLike), the quotes,
// primes, apostrophes, commas, equals signs and spaces of other scripts
// (and the letters shaped like them: Katakana ノ as a slash, the glottal
// stops ॽ ʔ Ɂ as a question mark), and two apostrophes or backticks in a
// row (a double quote).
func Fold(s string) string {
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case 0xFF01 <= r && r <= 0xFF5E:
			rs[i] = r - 0xFF01 + '!'
		case 0x1D7CE <= r && r <= 0x1D7FF:
			rs[i] = '0' + (r-0x1D7CE)%10
		case 0x1D400 <= r && r <= 0x1D6A3:
			// The mathematical letters: alphabets of 52, A to z.
			if n := (r - 0x1D400) % 52; n < 26 {
				rs[i] = 'A' + n
			} else {
				rs[i] = 'a' + n - 26
			}
		case slices.Contains([]rune(letterlike), r):
			rs[i] = rune(letterlikeASCII[slices.Index([]rune(letterlike), r)])
		case lookalike(r):
			a, _ := textsafe.LooksLike(r)
			rs[i] = rune(a)
		case utf8.RuneCountInString(shapedLike(r)) == 1:
			rs[i], _ = utf8.DecodeRuneInString(shapedLike(r))
		case r >= utf8.RuneSelf && unicode.Is(unicode.Nd, r):
			// Another script's digit: its value, counted from the zero
			// that starts its run (of ten, or of tens).
			z := r
			for unicode.Is(unicode.Nd, z-1) {
				z--
			}
			rs[i] = '0' + (r-z)%10
		case strings.ContainsRune("ʺ״″“”„‟❝❞˝ˮ〃ײᐦᐥ〞〟", r):
			rs[i] = '"'
		case strings.ContainsRune("ʹʼʻʽ‘’‛′׳ꞌꞋᑊᛌ՚ߴߵ", r):
			rs[i] = '\''
		case strings.ContainsRune("‚،ˏꓹ߸꘍᠂", r):
			rs[i] = ','
		case strings.ContainsRune("꞊᐀⹀", r):
			rs[i] = '='
		case strings.ContainsRune("ノ丿", r):
			rs[i] = '/'
		case r == '丶':
			rs[i] = '\\'
		case strings.ContainsRune("ॽʔɁ", r):
			rs[i] = '?'
		case r == 0xA0 || r == 0x2007 || r == 0x202F || 0x2000 <= r && r <= 0x200A || r == 0x3000 || r == 0x2800 || r == 0x3164 || r == 0xFFA0:
			rs[i] = ' '
		}
	}
	for i := 0; i+1 < len(rs); i++ {
		if (rs[i] == '\'' || rs[i] == '`') && (rs[i+1] == '\'' || rs[i+1] == '`') {
			rs[i], rs[i+1] = '"', '"'
		}
	}
	return string(rs)
}

// shapedLike is textsafe.ReadsLike's text for r, or "": not for the
// Hebrew yod (an apostrophe), which Hebrew spells with, so that two of
// them in a Hebrew word, shown as they are (textsafe.QuoteShaped), are
// not read as a double quote, as the library documents.
func shapedLike(r rune) string {
	if r == 'י' {
		return ""
	}
	t, _ := textsafe.ReadsLike(r)
	return t
}

// lookalike reports a letter that confusables.txt gives as shaped like an
// ASCII letter or digit.
func lookalike(r rune) bool {
	_, ok := textsafe.LooksLike(r)
	return ok
}

// ligatures are the letters whose compatibility form (NFKC) is two or
// three ASCII letters (the Latin ligatures and digraphs), and ŉ ('n);
// ligaturesASCII, that form of each, one per entry.
var (
	ligatures      = []rune("ĲĳǇǈǉǊǋǌǱǲǳﬀﬁﬂﬃﬄﬅﬆŉ")
	ligaturesASCII = []string{"IJ", "ij", "LJ", "Lj", "lj", "NJ", "Nj", "nj", "DZ", "Dz", "dz", "ff", "fi", "fl", "ffi", "ffl", "st", "st", "'n"}
)

// Read is Fold, with the ligatures written out as the letters
// they join (a person reads proﬁle as profile), and the other letters
// textsafe.ReadsLike gives as ASCII text as that text (ꚙ as oo, Ы as bl):
// not one character for one, so for comparing whole texts only.
func Read(s string) string {
	var b strings.Builder
	for _, r := range Fold(s) {
		if i := slices.Index(ligatures, r); i >= 0 {
			b.WriteString(ligaturesASCII[i])
			continue
		}
		if t := shapedLike(r); t != "" {
			b.WriteString(t)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
