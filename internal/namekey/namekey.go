// Package namekey makes the key under which tool names are matched across
// spellings: the policy's rules, the gateway's pins and the limiter's
// per-tool limits compare names by it, so that a downstream server that
// lower-cases, upper-cases or case-folds the names it is called with
// (Go's strings.ToLower and ToUpper, Python's lower, upper and casefold,
// JavaScript's toLowerCase and toUpperCase, NFKC case folding's dropping
// of default-ignorable characters) cannot be reached under a spelling
// that escapes a rule or a limit meant for the name.
package namekey

import (
	"unicode"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard/internal/foldkey"
)

// BufSize is the size of the stack buffer a name's key is made in: a key
// is cut once it is longer than every key it is compared with (Append's
// limit), so no key of names whose keys are under BufSize-8 bytes needs
// the heap.
const BufSize = 256

// Append appends to dst the key of s under which names are matched:
// every character replaced by its full case folding (CaseFolding.txt's C
// and F mappings, so "ß" becomes "SS" and "ﬁ" "FI"), as the smallest rune
// of each simple-folding orbit ("k", "K" and the Kelvin sign are "K"),
// also for the case pairs of Unicode 16 and 17 (see laterFold); both
// dotted and dotless i as "I" (as Go's ToLower and ToUpper map the Turkish
// "İ" and "ı"), and a combining dot above (U+0307) after an "I" left out
// (Python and JavaScript lower-case "İ" as "i" and that dot); and
// default-ignorable characters (format characters, variation selectors,
// the combining grapheme joiner) left out. Invalid UTF-8 becomes U+FFFD.
// It stops once more than limit bytes were appended: a key cut so is
// longer than any of the policy's keys, and its first limit bytes are
// those of the whole key.
func Append(dst []byte, s string, limit int) []byte {
	start := len(dst)
	for i := 0; i < len(s) && len(dst)-start <= limit; {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if Ignorable(r) || r == '\u0307' && len(dst) > start && dst[len(dst)-1] == 'I' {
			continue
		}
		m := laterFold(foldkey.Rune(r))
		if f := fullFold(m); f != "" {
			dst = append(dst, f...)
		} else {
			dst = utf8.AppendRune(dst, m)
		}
	}
	return dst
}

// Of returns the whole key of the name s.
func Of(s string) string {
	return string(Append(nil, s, len(s)*3+8))
}

// laterFold returns the smaller rune of a case pair that Unicode 16 or 17
// added, which Go's unicode tables (Unicode 15.0) do not know yet while
// JavaScript on a current ICU (Unicode 17) and Python 3.14 (Unicode 16)
// lower- and upper-case by it; else r.
// The smaller rune is the one the tables will give as the orbit's smallest
// once they know the pair, so the key stays the same then.
func laterFold(r rune) rune {
	switch {
	case r < 0x1C8A:
		return r
	case r == 0x1C8A: // Cyrillic tje
		return 0x1C89
	case r == 0xA7CB: // Latin capital ram's horn
		return 0x0264
	case r == 0xA7DC: // Latin capital lambda with stroke
		return 0x019B
	case 0xA7CC <= r && r <= 0xA7DB: // upper case even, lower case odd
		return r &^ 1
	case 0x10D70 <= r && r <= 0x10D85: // Garay
		return r - 0x20
	case 0x16EBB <= r && r <= 0x16ED3: // Beria Erfe
		return r - 0x1B
	}
	return r
}

// Ignorable reports a default-ignorable character (or a format character
// that is not one, which a gateway refuses anyway): NFKC case folding
// drops them, and most are not seen on screen.
func Ignorable(r rune) bool {
	return unicode.In(r, unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

// fullFold returns the key form of the full case folding of r, the
// smallest rune of its simple-folding orbit, when that is not r itself
// (CaseFolding.txt's F mappings, and the Turkish dotted and dotless i),
// else "". The runes it returns are themselves in key form.
func fullFold(r rune) string {
	if r < 0xDF || r > 0xFB17 {
		return ""
	}
	switch r {
	case 0x00DF: // ß
		return "SS"
	case 0x0130, 0x0131: // İ ı
		return "I"
	case 0x0149: // ŉ
		return "\u02BCN"
	case 0x01F0: // ǰ
		return "J\u030C"
	case 0x0390, 0x1FD3: // ΐ ΐ
		return "\u0345\u0308\u0301"
	case 0x03B0, 0x1FE3: // ΰ ΰ
		return "\u03A5\u0308\u0301"
	case 0x0587: // և
		return "\u0535\u0552"
	case 0x1E96: // ẖ
		return "H\u0331"
	case 0x1E97: // ẗ
		return "T\u0308"
	case 0x1E98: // ẘ
		return "W\u030A"
	case 0x1E99: // ẙ
		return "Y\u030A"
	case 0x1E9A: // ẚ
		return "A\u02BE"
	case 0x1F50: // ὐ
		return "\u03A5\u0313"
	case 0x1F52: // ὒ
		return "\u03A5\u0313\u0300"
	case 0x1F54: // ὔ
		return "\u03A5\u0313\u0301"
	case 0x1F56: // ὖ
		return "\u03A5\u0313\u0342"
	case 0x1F80: // ᾀ
		return "\u1F00\u0345"
	case 0x1F81: // ᾁ
		return "\u1F01\u0345"
	case 0x1F82: // ᾂ
		return "\u1F02\u0345"
	case 0x1F83: // ᾃ
		return "\u1F03\u0345"
	case 0x1F84: // ᾄ
		return "\u1F04\u0345"
	case 0x1F85: // ᾅ
		return "\u1F05\u0345"
	case 0x1F86: // ᾆ
		return "\u1F06\u0345"
	case 0x1F87: // ᾇ
		return "\u1F07\u0345"
	case 0x1F90: // ᾐ
		return "\u1F20\u0345"
	case 0x1F91: // ᾑ
		return "\u1F21\u0345"
	case 0x1F92: // ᾒ
		return "\u1F22\u0345"
	case 0x1F93: // ᾓ
		return "\u1F23\u0345"
	case 0x1F94: // ᾔ
		return "\u1F24\u0345"
	case 0x1F95: // ᾕ
		return "\u1F25\u0345"
	case 0x1F96: // ᾖ
		return "\u1F26\u0345"
	case 0x1F97: // ᾗ
		return "\u1F27\u0345"
	case 0x1FA0: // ᾠ
		return "\u1F60\u0345"
	case 0x1FA1: // ᾡ
		return "\u1F61\u0345"
	case 0x1FA2: // ᾢ
		return "\u1F62\u0345"
	case 0x1FA3: // ᾣ
		return "\u1F63\u0345"
	case 0x1FA4: // ᾤ
		return "\u1F64\u0345"
	case 0x1FA5: // ᾥ
		return "\u1F65\u0345"
	case 0x1FA6: // ᾦ
		return "\u1F66\u0345"
	case 0x1FA7: // ᾧ
		return "\u1F67\u0345"
	case 0x1FB2: // ᾲ
		return "\u1F70\u0345"
	case 0x1FB3: // ᾳ
		return "\u0391\u0345"
	case 0x1FB4: // ᾴ
		return "\u0386\u0345"
	case 0x1FB6: // ᾶ
		return "\u0391\u0342"
	case 0x1FB7: // ᾷ
		return "\u0391\u0342\u0345"
	case 0x1FC2: // ῂ
		return "\u1F74\u0345"
	case 0x1FC3: // ῃ
		return "\u0397\u0345"
	case 0x1FC4: // ῄ
		return "\u0389\u0345"
	case 0x1FC6: // ῆ
		return "\u0397\u0342"
	case 0x1FC7: // ῇ
		return "\u0397\u0342\u0345"
	case 0x1FD2: // ῒ
		return "\u0345\u0308\u0300"
	case 0x1FD6: // ῖ
		return "\u0345\u0342"
	case 0x1FD7: // ῗ
		return "\u0345\u0308\u0342"
	case 0x1FE2: // ῢ
		return "\u03A5\u0308\u0300"
	case 0x1FE4: // ῤ
		return "\u03A1\u0313"
	case 0x1FE6: // ῦ
		return "\u03A5\u0342"
	case 0x1FE7: // ῧ
		return "\u03A5\u0308\u0342"
	case 0x1FF2: // ῲ
		return "\u1F7C\u0345"
	case 0x1FF3: // ῳ
		return "\u03A9\u0345"
	case 0x1FF4: // ῴ
		return "\u038F\u0345"
	case 0x1FF6: // ῶ
		return "\u03A9\u0342"
	case 0x1FF7: // ῷ
		return "\u03A9\u0342\u0345"
	case 0xFB00: // ﬀ
		return "FF"
	case 0xFB01: // ﬁ
		return "FI"
	case 0xFB02: // ﬂ
		return "FL"
	case 0xFB03: // ﬃ
		return "FFI"
	case 0xFB04: // ﬄ
		return "FFL"
	case 0xFB05, 0xFB06: // ﬅ ﬆ
		return "ST"
	case 0xFB13: // ﬓ
		return "\u0544\u0546"
	case 0xFB14: // ﬔ
		return "\u0544\u0535"
	case 0xFB15: // ﬕ
		return "\u0544\u053B"
	case 0xFB16: // ﬖ
		return "\u054E\u0546"
	case 0xFB17: // ﬗ
		return "\u0544\u053D"
	}
	return ""
}
