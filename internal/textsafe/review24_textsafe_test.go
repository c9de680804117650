package textsafe

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestReview24LookalikeTable checks what it can of the generated table:
// sorted, letters outside ASCII, ASCII letters or digits, the right
// script, none of ReadsASCII's, and the entries the brief names.
func TestReview24LookalikeTable(t *testing.T) {
	for i, e := range lookalikes {
		if i > 0 && lookalikes[i-1].r >= e.r {
			t.Errorf("not sorted at %U", e.r)
		}
		if e.r < utf8.RuneSelf || !unicode.IsLetter(e.r) || ReadsASCII(e.r) {
			t.Errorf("%U %c: not a letter outside ASCII left to the table", e.r, e.r)
		}
		if !wordRune(rune(e.ascii)) || e.ascii >= utf8.RuneSelf {
			t.Errorf("%U: %q is not an ASCII letter or digit", e.r, e.ascii)
		}
		if e.script == 0 && !unicode.Is(unicode.Latin, e.r) ||
			e.script != 0 && (int(e.script) >= len(lookalikeScripts) || !unicode.Is(lookalikeScripts[e.script], e.r)) {
			t.Errorf("%U %c: wrong script %d", e.r, e.r, e.script)
		}
	}
	for _, c := range []string{
		"аa", "еe", "оo", "рp", "сc", "уy", "хx", "іi", "јj", "ѕs", "ԁd", "ԛq", "ԝw",
		"АA", "ВB", "ЕE", "КK", "МM", "НH", "ОO", "РP", "СC", "ТT", "ХX", "ЅS", "Іl", "ЈJ", "З3", "б6", "шw", "ӏl",
		"ΑA", "ΒB", "ΕE", "ΖZ", "ΗH", "Ιl", "ΚK", "ΜM", "ΝN", "ΟO", "ΡP", "ΤT", "ΥY", "ΧX", "οo", "νv",
		"օo", "ᎪA", "ꓮA", "ıi", "ɑa", "ɡg", "ⲟo", "ყy",
	} {
		r, _ := utf8.DecodeRuneInString(c)
		want := c[len(c)-1]
		if got, ok := LooksLike(r); !ok || got != want {
			t.Errorf("LooksLike(%c) = %q, %v; want %q", r, got, ok, want)
		}
	}
	for _, r := range "жъλшщдбa1ａ𝐚ﬁé" {
		if _, ok := LooksLike(r); ok && r != 'ш' && r != 'б' {
			t.Errorf("LooksLike(%c): an entry", r)
		}
	}
}

// TestReview24ReadsASCIIIn: the word rule.
func TestReview24ReadsASCIIIn(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"Acme", false}, {"Москва", false}, {"доставка завтра", false}, {"λόγος", false},
		{"שלום", false}, {"東京タワ", false}, {"Tシャツ", false}, {"café", false}, {"", false},
		{"Аcme", true}, {"АСМЕ", true}, {"ACMEъ", true}, {"Аcme ж", true}, {"сор", true},
		{"сοк", true}, {"admın", true}, {"gօօgle", true}, {"ᎪᏟᎷᎬ", true}, {"З", true},
		{"ТОКЕN-1", true}, {"pay Аcme now", true}, {"１２", true}, {"Москва Аcme", true},
		{"caféъ", true}, {"Москва-1", false}, {"Мо1", true},
	} {
		if got := ReadsASCIIIn(tc.s); got != tc.want {
			t.Errorf("ReadsASCIIIn(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
	for _, tc := range []struct{ s, want string }{
		{"Аcme", `"\u0410cme"`},
		{"ACMEъ", `"ACME\u044a"`},
		{"Москва Аcme", `"Москва \u0410cme"`},
		{"сοк", `"\u0441\u03bf\u043a"`}, // к: Greek κ too (review24c)
		{"x\"Аʺ\\''", `"x\"\u0410\u02ba\\\u0027\u0027"`},
		{"１ｚ", `"\uff11\uff5a"`},
	} {
		if got := QuoteASCIIShaped(tc.s); got != tc.want {
			t.Errorf("QuoteASCIIShaped(%q) = %s, want %s", tc.s, got, tc.want)
		}
	}
}

// TestReview24QuoteASCIIShapedAsBefore: for text without letters of
// scripts with lookalikes (Thai and Japanese have none), QuoteASCIIShaped
// writes what confirm wrote before it (QuoteShaped, then ReadsASCII's
// characters escaped).
func TestReview24QuoteASCIIShapedAsBefore(t *testing.T) {
	before := func(s string) string {
		var b strings.Builder
		for _, r := range QuoteShaped(s) {
			if ReadsASCII(r) {
				b.WriteString(strings.Trim(strconv.QuoteRuneToASCII(r), "'"))
				continue
			}
			b.WriteRune(r)
		}
		return b.String()
	}
	parts := []string{"a", "1", " ", "\"", "\\", "'", "`", "ʺ", "１", "𝐚", "ﬁ", "ℯ", "٣", "é", "\u0301",
		"\ue000", "\U000e0100", "…", "東", "ー", "\x00", "\t", "😀", "ก", "タ"}
	r := rand.New(rand.NewPCG(24, 1))
	for range 3000 {
		var b strings.Builder
		for range r.IntN(6) {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		s := b.String()
		if got, want := QuoteASCIIShaped(s), before(s); got != want {
			t.Errorf("QuoteASCIIShaped(%q) = %s, before %s", s, got, want)
		}
	}
}

// TestReview24ReadsASCIIInAllocs: the check is linear and allocates
// nothing.
func TestReview24ReadsASCIIInAllocs(t *testing.T) {
	s := strings.Repeat("доставка завтра Аcme refund ", 100)
	if n := testing.AllocsPerRun(10, func() { ReadsASCIIIn(s) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
