// Package textsafe makes untrusted text safe to show a human or a model:
// the dry-run summary and the confirmation prompt both print tool names and
// argument keys (and, for the prompt, values) that a model wrote.
package textsafe

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Clean returns s without invalid UTF-8, control characters (Cc), format
// characters (Cf, which include the bidirectional overrides that can make
// text read differently than it is, and the tag characters that can spell
// hidden ASCII), the variation selectors but U+FE00-U+FE0F (the
// supplementary ones U+E0100-U+E01EF, which can carry hidden bytes, and
// the Mongolian free ones U+180B-U+180F), the other characters a renderer
// shows as nothing (Unicode's Other_Default_Ignorable_Code_Point: the Hangul
// fillers U+3164 and U+FFA0, the combining grapheme joiner, the unassigned
// rest of the tag block) and line or paragraph separators, cut to
// maxRunes runes with "…" appended when it was longer (a negative
// maxRunes counts as 0). The variation selectors U+FE00-U+FE0F are kept:
// emoji need them.
func Clean(s string, maxRunes int) string {
	maxRunes = max(maxRunes, 0)
	var b strings.Builder
	n := 0
	for i, r := range s {
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") {
			continue // an invalid byte, not a real U+FFFD
		}
		if hidden(r) {
			continue
		}
		if n == maxRunes {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// CleanLines is [Clean] for text of several lines: it keeps line feeds
// and tabs, and drops the rest as Clean does (carriage returns too, which
// a terminal uses to overwrite a line).
func CleanLines(s string, maxRunes int) string {
	maxRunes = max(maxRunes, 0)
	var b strings.Builder
	n := 0
	for i, r := range s {
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") {
			continue
		}
		if r != '\n' && r != '\t' && hidden(r) {
			continue
		}
		if n == maxRunes {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// Plain reports whether [Clean] would keep s as it is, but for its length:
// s is valid UTF-8 (a real U+FFFD counts as valid) without a character
// Clean drops.
func Plain(s string) bool {
	for i, r := range s {
		if r < utf8.RuneSelf {
			if r < 0x20 || r == 0x7f { // the ASCII of Cc; ASCII has no Cf, Zl, Zp
				return false
			}
			continue
		}
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") || hidden(r) {
			return false
		}
	}
	return true
}

// Word reports whether s can be shown without quotes beside other words
// and separators: non-empty, only letters, digits and the punctuation
// -_.:/@+# and "…" (which [Clean] puts where it cut), none of which reads
// as a comma, a quote, a space or the end of a sentence. So not the
// letters and digits shaped like those (see lookalike).
func Word(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("-_.:/@+#…", r) || lookalike(r) {
			return false
		}
	}
	return true
}

// lookalike reports a letter or digit shaped like punctuation: a modifier
// letter (Lm: the quotes, primes and commas ʺ ʼ ˮ ˏ ꓹ among them), a click
// letter (ǀ ǁ ǂ ǃ, the last an exclamation mark), the saltillo (Ꞌ ꞌ, an
// apostrophe), an Arabic-Indic zero (٠ ۰, a dot), the Yiddish double yod
// (ײ, the gershayim's " shape), the Canadian syllabics finals ᐥ and ᐦ (a
// double acute, two short vertical strokes: ") and the apostrophes ᑊ and ᛌ
// (the West-Cree P, the runic short-twig-sol), and the letters of scripts
// without lookalikes (see [ReadsASCIIIn]) and Latin ones that Unicode's
// confusables.txt gives as ASCII punctuation: the Katakana no ノ and the
// ideograph 丿 (a slash: docsノx would read as docs/x), the ideograph 丶
// (a backslash), the Devanagari and Latin glottal stops ॽ ʔ Ɂ (a question
// mark) and the Latin ŉ ('n).
func lookalike(r rune) bool {
	if r < 0x0149 {
		return false
	}
	switch {
	case 0x01C0 <= r && r <= 0x01C3, r == 0xA78B, r == 0xA78C, r == 0x0660, r == 0x06F0,
		r == 0x05F2, r == 0x1425, r == 0x1426, r == 0x144A, r == 0x16CC,
		r == 0x30CE, r == 0x4E3F, r == 0x4E36, r == 0x097D, r == 0x0294, r == 0x0241, r == 0x0149:
		return true
	}
	return unicode.Is(unicode.Lm, r)
}

// JSONReplaced reports whether raw, valid JSON text, holds text that a
// decoder such as encoding/json reads as U+FFFD, in a string or a member
// name: invalid UTF-8, or an escaped UTF-16 surrogate that is not half of
// a pair ("\ud800", or "\udc00" first). Such text reads otherwise in a
// decoder that keeps it (one in JavaScript, say). Linear: one utf8.Valid,
// and a look at each escape. Text that breaks off inside an escape (not
// JSON) is reported too.
func JSONReplaced(raw []byte) bool {
	if !utf8.Valid(raw) {
		return true
	}
	for i := 0; ; {
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 {
			return false
		}
		// Valid JSON: a backslash starts an escape in a string, and \u
		// has four hex digits.
		i += j
		if i+2 > len(raw) || raw[i+1] == 'u' && i+6 > len(raw) {
			return true // not JSON: broken off inside an escape
		}
		if raw[i+1] != 'u' {
			i += 2
			continue
		}
		r := hex4(raw[i+2 : i+6])
		i += 6
		switch {
		case 0xd800 <= r && r < 0xdc00:
			if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
				return true
			}
			if lo := hex4(raw[i+2 : i+6]); lo < 0xdc00 || lo >= 0xe000 {
				return true
			}
			i += 6
		case 0xdc00 <= r && r < 0xe000:
			return true
		}
	}
}

// hex4 is the value of four hex digits.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// hidden reports a character Clean and CleanLines drop.
func hidden(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Other_Default_Ignorable_Code_Point) ||
		0x180B <= r && r <= 0x180F || 0xE0100 <= r && r <= 0xE01EF
}

// QuoteShaped is strconv.Quote of s, for a person to read, with every
// character outside ASCII that is not a letter or digit [Word] shows bare
// escaped too (\u02ba): strconv.Quote escapes only the ASCII quote, so
// the quotes, primes and commas of other scripts, and the letters shaped
// like them, would read as the end of the quotes ("okʺ, amount=1, zʺ" as
// "ok", then more). Letters and digits of any script stay readable, and
// so does the "…" that [Clean] puts where it cut; but the letters Word
// takes for punctuation (see lookalike) are escaped, every modifier letter
// (Lm) among them (the Japanese long-vowel mark ー and the iteration marks
// 々 and ๆ too), and so are combining marks (an accent written apart, the
// vowel signs of Indic scripts).
// Two or more ASCII apostrophes or backticks in a row, which read as a
// double quote, are escaped as [QuotePairs] does; one alone (don't) is
// not. The lookalikes are a list, not a proof: right-to-left letters
// beside punctuation may still be reordered on screen, and two Hebrew
// yods (יי), which Hebrew spells with, are shown as they are, though
// they look like the double yod ײ.
func QuoteShaped(s string) string {
	q := QuotePairs(strconv.Quote(s))
	if !strings.ContainsFunc(q, Shaped) {
		return q
	}
	var b strings.Builder
	for _, r := range q {
		if Shaped(r) {
			b.WriteString(strings.Trim(strconv.QuoteRuneToASCII(r), "'"))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// QuotePairs returns s, quoted text (Go's or JSON's), with every ASCII
// apostrophe and backtick that stands beside another of them escaped
// (\u0027, \u0060): two in a row read as a double quote (Unicode's
// confusables.txt gives two apostrophes as the skeleton of "), so ok and
// two of them, then ", amount=1", would read as "ok", then more. Both
// escapes mean the same character to a Go or JSON reader, and in JSON
// text the two occur only in strings.
func QuotePairs(s string) string {
	tick := func(i int) bool { return i >= 0 && i < len(s) && (s[i] == '\'' || s[i] == '`') }
	first := -1
	for i := 0; i < len(s)-1 && first < 0; i++ {
		if tick(i) && tick(i+1) {
			first = i
		}
	}
	if first < 0 {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:first])
	for i := first; i < len(s); i++ {
		switch {
		case !tick(i) || !tick(i-1) && !tick(i+1):
			b.WriteByte(s[i])
		case s[i] == '\'':
			b.WriteString(`\u0027`)
		default:
			b.WriteString(`\u0060`)
		}
	}
	return b.String()
}

// Shaped reports a character outside ASCII that [Word] does not show bare:
// one that QuoteShaped escapes.
func Shaped(r rune) bool { return r >= utf8.RuneSelf && !Word(string(r)) }

// Quoted returns s, text a client chose (a tool name, an HTTP method), in
// a form fit for a record or a log line: quoted and escaped as
// strconv.QuoteToASCII does (an invisible or control character shows as
// \u200b or \x00, never as itself), and, beyond maxBytes bytes, cut there
// (see [CutBytes]) with "..." after the closing quote.
func Quoted(s string, maxBytes int) string {
	cut, more := CutBytes(s, maxBytes)
	if !more {
		return strconv.QuoteToASCII(s)
	}
	return strconv.QuoteToASCII(cut) + "..."
}

// CutBytes returns the first maxBytes bytes of s, or fewer so as not to
// end inside a character, and whether s was longer than maxBytes. A
// negative maxBytes counts as 0.
func CutBytes(s string, maxBytes int) (string, bool) {
	maxBytes = max(maxBytes, 0)
	if len(s) <= maxBytes {
		return s, false
	}
	cut := maxBytes
	for i := 0; i < utf8.UTFMax-1 && cut > 0 && !utf8.RuneStart(s[cut]); i++ {
		cut--
	}
	return s[:cut], true
}

// ASCIIJSON returns the JSON text js with every character outside printable
// ASCII written as a \uXXXX escape (a surrogate pair beyond U+FFFF), but
// JSON's white space (a tab, a line feed, a carriage return: valid JSON
// holds them only between tokens, where an escape is no JSON) as a space:
// the same value to a JSON reader, and to a person reading it in a
// terminal no character that shows as nothing or reorders the text. js
// must be valid UTF-8 (json.Marshal's text is, its control characters
// escaped).
func ASCIIJSON(js string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	esc := func(r rune) {
		b.WriteString(`\u`)
		for shift := 12; shift >= 0; shift -= 4 {
			b.WriteByte(hex[(r>>shift)&15])
		}
	}
	for _, r := range js {
		switch {
		case r >= 0x20 && r < 0x7f:
			b.WriteByte(byte(r))
		case r == '\t' || r == '\n' || r == '\r':
			b.WriteByte(' ')
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			esc(r1)
			esc(r2)
		default:
			esc(r)
		}
	}
	return b.String()
}

// ReadsASCII reports a fullwidth form of an ASCII character, a mathematical
// letter or digit (and the letters of the Letterlike Symbols block, where
// the mathematical alphabets have some of theirs: ℯ, ℓ, ⅇ), another
// character whose compatibility form (NFKC) is an ASCII letter (ª º ſ) or
// two or three of them (the ligatures ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ, the digraphs Ĳ ĳ Ǉ ǈ ǉ
// Ǌ ǋ ǌ Ǳ ǲ ǳ), or a decimal digit of another script: characters that read
// as (or mean) the ASCII letters and digits, so that a text with them may
// spell a number, a literal or another key ("１２", "𝟏𝟐", "ｔｒｕｅ", "1ℯ3",
// "proﬁle"). The other compatibility digits and letters (¹ ① Ⅻ ₂ ⓐ) are
// not letters or digits to [Word]: [QuoteShaped] escapes them.
func ReadsASCII(r rune) bool {
	switch {
	case r < utf8.RuneSelf:
		return false
	case r >= 0xFF01 && r <= 0xFF5E, r >= 0x1D400 && r <= 0x1D7FF, r == 0xAA, r == 0xBA, r == 0x17F:
		return true
	case r == 0x132, r == 0x133, r >= 0x1C7 && r <= 0x1CC, r >= 0x1F1 && r <= 0x1F3, r >= 0xFB00 && r <= 0xFB06:
		return true // ligatures and digraphs: ĳ, ǳ, ﬁ
	case r >= 0x2100 && r <= 0x214F:
		return unicode.IsLetter(r)
	}
	return unicode.Is(unicode.Nd, r)
}

// lookalikeEntry is one letter of lookalikes: the letter, the ASCII letter
// or digit it looks like, and its script (an index in lookalikeScripts).
type lookalikeEntry struct {
	r      rune
	ascii  byte
	script uint8
}

// lookalikeOf returns r's entry in lookalikes, and whether it has one.
func lookalikeOf(r rune) (lookalikeEntry, bool) {
	if r < 0x0131 {
		return lookalikeEntry{}, false
	}
	i, ok := slices.BinarySearchFunc(lookalikes[:], r, func(e lookalikeEntry, r rune) int { return int(e.r - r) })
	if !ok {
		return lookalikeEntry{}, false
	}
	return lookalikes[i], true
}

// shapedEntry is one letter of asciiShaped: the letter, the text it
// reads as, and its script (an index in lookalikeScripts).
type shapedEntry struct {
	r      rune
	reads  string
	script uint8
}

// ReadsLike returns the text that r, a letter of a script with lookalikes
// that [LooksLike] has no ASCII letter or digit for, is shaped like, when
// Unicode's confusables.txt gives that as ASCII once its combining marks
// are dropped (r's skeleton, composed where Unicode has the letter with
// its mark), and whether there is one: an ASCII letter with marks
// (Cyrillic ё, Greek ό, η: ë, ó, n and U+0329), two ASCII letters (ꚙ, ӕ,
// Ы: oo, ae, bl) or ASCII punctuation (Coptic Ⲻ, Cherokee Ꭾ, Hebrew י:
// -, ?, '). The word rule of [ReadsASCIIIn] takes these as lookalikes.
func ReadsLike(r rune) (string, bool) {
	if e, ok := shapedOf(r); ok {
		return e.reads, true
	}
	return "", false
}

// shapedOf returns r's entry in asciiShaped, and whether it has one.
func shapedOf(r rune) (shapedEntry, bool) {
	if r < asciiShaped[0].r {
		return shapedEntry{}, false
	}
	i, ok := slices.BinarySearchFunc(asciiShaped[:], r, func(e shapedEntry, r rune) int { return int(e.r - r) })
	if !ok {
		return shapedEntry{}, false
	}
	return asciiShaped[i], true
}

// LooksLike returns the ASCII letter or digit that r, a letter outside
// ASCII, is shaped like (Cyrillic а, Greek Ο, Cherokee Ꭺ: a, O, A), as
// Unicode's confusables.txt gives it (r's skeleton), and whether there is
// one. The letters [ReadsASCII] reports (fullwidth, mathematical,
// letterlike) are left to it: LooksLike reports false for them.
func LooksLike(r rune) (byte, bool) {
	e, ok := lookalikeOf(r)
	return e.ascii, ok
}

// ReadsASCIIIn reports whether s holds a character that reads as an ASCII
// letter or digit where it stands: one [ReadsASCII] reports, or a letter
// [LooksLike] gives an ASCII letter or digit for (or [ReadsLike] ASCII
// text) that the word rule below does not leave bare; or a letter shaped
// like one of another script with lookalikes (Cyrillic П, Greek Π) in a
// word that the rule does not leave bare. [QuoteASCIIShaped] escapes them.
//
// The word rule. A word is a run of letters and digits. The lookalikes of
// a word wholly in one other script are shown as they are when no other
// script, ASCII or one with lookalikes, has a word shaped like it, letter
// for letter: when it holds a letter of its script shaped like no ASCII
// one, and no other script has a letter like each of its letters (Москва,
// λόγος, שלום; but not Cyrillic ПАР, как, в, or Greek ΠΑΡ, κακ, which read
// as the same word in the other script). Such a word reads as that
// script, and as no other text. The letters
// [ReadsLike] reports, shaped like ASCII with marks, like two ASCII letters
// or like ASCII punctuation (ё, ό, ꚙ, Ы, Coptic Ⲻ), are lookalikes here,
// not such a letter: else Сһӏоё (Cyrillic) would read as Chloë, ѕсһꚙӏ as
// school. In every other
// word they are escaped, and with them every letter shaped like one of
// another script with lookalikes (\u041f\u0410\u0420 for ПАР, not
// П\u0410\u0420, which would read as Greek Π\u0391\u03a1): beside ASCII
// letters or digits or other Latin
// letters (Аcme, Cyrillic А), beside letters of another script (сοк,
// Greek ο), in a word of lookalikes only (АСМЕ, сор: these read as ASCII
// whatever their script, so a short word of another script, wholly of
// such letters, is escaped too), and always the Latin ones (ı, ɑ, ɡ: so
// the Turkish dotless ı too). And in a word with ASCII letters or digits,
// or other Latin letters, every letter of a script with lookalikes is
// escaped, shaped like ASCII or not (ACMEъ, ACME and Cyrillic ъ): else it
// would read as the same word in that script (АСМЕъ), shown as it is.
// So an attacker who picks the text gets a lookalike shown bare only in a
// word that visibly holds a letter of its own script, and no other text
// reads, letter for letter, as that word. Which letters look alike is
// Unicode's confusables.txt (see twins). Not covered: two letters of one
// script with one skeleton in such a word (Greek σ and ο, Hebrew ו and ן)
// are shown as they are, and so are letters whose skeleton is a letter
// outside ASCII that may read as one (Cyrillic ь, Latin ƅ; м, Latin ʍ),
// and letters like those of scripts without lookalikes (Malayalam ഉ,
// Tamil உ), which are not in twins.
func ReadsASCIIIn(s string) bool {
	if strings.ContainsFunc(s, ReadsASCII) {
		return true
	}
	var w word
	for i, r := range s {
		if w.start(s, i, r) && w.escapes(r) {
			return true
		}
	}
	return false
}

// QuoteASCIIShaped is [QuoteShaped] with the characters [ReadsASCIIIn]
// reports escaped too (\u0410cme for Аcme, Cyrillic А).
func QuoteASCIIShaped(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteByte('"')
	var w word
	for i, r := range s {
		inWord := w.start(s, i, r)
		switch {
		case Shaped(r) || ReadsASCII(r) || inWord && w.escapes(r):
			b.WriteString(strings.Trim(strconv.QuoteRuneToASCII(r), "'"))
		case r < 0x20 || r == 0x7f || r == '"' || r == '\\':
			q := strconv.Quote(string(r))
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return QuotePairs(b.String())
}

// word is the word a scan of a text is in, for the word rule of
// [ReadsASCIIIn]: where it ends, and what it holds.
type word struct {
	end int // byte offset in the text
	// latin: an ASCII letter or digit, or another Latin letter.
	// script: the script (an index in lookalikeScripts) of its letters
	// of scripts with lookalikes; mixed: letters of two such scripts;
	// looks: a lookalike, or a letter of such a script with twins;
	// twins: the scripts (as in twins) with a letter that looks like
	// each of those letters, ASCII (bit 0) for a lookalike.
	latin, mixed, looks bool
	script              uint8
	twins               uint32
}

// start reports whether r, at s[i:], is in a word, and when it starts
// one, reads that word.
func (w *word) start(s string, i int, r rune) bool {
	if i < w.end {
		return true
	}
	if !wordRune(r) {
		return false
	}
	*w = word{end: i, twins: ^uint32(0)}
	for w.end < len(s) {
		r, n := utf8.DecodeRuneInString(s[w.end:])
		if !wordRune(r) {
			break
		}
		w.end += n
		switch e, ok := lookalikeOf(r); {
		case r < utf8.RuneSelf || ok && e.script == 0 || !ok && unicode.Is(unicode.Latin, r):
			w.latin = true
			w.looks = w.looks || ok
		case ok:
			w.looks = true
			w.twins &= twinsOf(r) | 1
			w.note(e.script)
		case unicode.IsLetter(r):
			if sc := scriptOf(r); sc > 0 {
				t := twinsOf(r)
				if _, shaped := shapedOf(r); shaped {
					t |= 1
				}
				w.looks = w.looks || t != 0
				w.twins &= t
				w.note(sc)
			}
		}
	}
	return true
}

func (w *word) note(script uint8) {
	if w.script != 0 && w.script != script {
		w.mixed = true
	}
	w.script = script
}

// escapes reports whether r, a character of w, is escaped by the word
// rule of [ReadsASCIIIn].
func (w *word) escapes(r rune) bool {
	if r < utf8.RuneSelf || !w.looks && !(w.latin && w.script != 0) {
		return false // fast: nothing to escape in w
	}
	if !w.latin && !w.mixed && w.script != 0 && w.twins == 0 {
		return false // wholly in one other script, visibly
	}
	if _, ok := lookalikeOf(r); ok {
		return true
	}
	if _, ok := shapedOf(r); ok {
		return true
	}
	if r < twins[0].r || !unicode.IsLetter(r) || scriptOf(r) == 0 {
		return false
	}
	return w.latin || twinsOf(r) != 0
}

// twinEntry is one letter of twins: the letter, and the scripts (bit i
// for lookalikeScripts[i], bit 0 for ASCII) with a letter like it.
type twinEntry struct {
	r     rune
	twins uint32
}

// twinsOf returns the scripts with a letter that looks like r (its set in
// twins), or 0.
func twinsOf(r rune) uint32 {
	if r < twins[0].r {
		return 0
	}
	i, ok := slices.BinarySearchFunc(twins[:], r, func(e twinEntry, r rune) int { return int(e.r - r) })
	if !ok {
		return 0
	}
	return twins[i].twins
}

// wordRune reports a character of a word: a letter or a digit.
func wordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// scriptOf returns the index in lookalikeScripts of r's script, or 0 when
// it has none there.
func scriptOf(r rune) uint8 {
	for i, t := range lookalikeScripts {
		if t != nil && unicode.Is(t, r) {
			return uint8(i)
		}
	}
	return 0
}
