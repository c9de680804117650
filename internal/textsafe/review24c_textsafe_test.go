package textsafe

import (
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The word rule of ReadsASCIIIn left a word wholly in one other script
// bare when it held a letter of that script shaped like no ASCII one. But
// the scripts with lookalikes share letters among them too (confusables.txt:
// Cyrillic П and Greek Π, Г and Γ, Ф and Φ, к and κ, т and τ; в and the
// Cherokee ᏼ), so a word of such letters, with the lookalikes, read as the
// same word in the other script: Cyrillic ПАР and Greek ΠΑΡ, как and κακ
// were both shown bare, though a server reads them as different text.
func TestReview24cWholeScriptTwins(t *testing.T) {
	pairs := [][2]string{
		{"ПАР", "ΠΑΡ"}, // Cyrillic, Greek
		{"ТАГ", "ΤΑΓ"}, // Т Α Г against Τ Α Γ
		{"ПФ", "ΠΦ"},   // no ASCII lookalike at all
		{"как", "κακ"}, // lower case
		{"КАРТА", "ΚΑΡΤΑ"},
		{"Փ", "Φ"}, // Armenian, Greek
	}
	for _, p := range pairs {
		for _, s := range p {
			if !ReadsASCIIIn(s) {
				t.Errorf("ReadsASCIIIn(%q) = false: it is shown bare, and reads as %q", s, p)
			}
			if q := QuoteASCIIShaped(s); strings.ContainsFunc(q, func(r rune) bool { return r >= 0x80 }) {
				t.Errorf("QuoteASCIIShaped(%q) = %s: letters shaped like another script's left bare", s, q)
			}
		}
	}
	// Still bare: a letter in them no other script has.
	for _, s := range []string{"Москва", "доставка", "адрес", "Шереметьево", "ёлка", "λόγος", "θεός",
		"Καλημέρα", "שלום", "Ереван", "Пж", "привет", "мир", "Київ", "Երևան", "თბილისი"} {
		if ReadsASCIIIn(s) || QuoteASCIIShaped(s) != `"`+s+`"` {
			t.Errorf("%q is escaped (%s); it reads only as its own script", s, QuoteASCIIShaped(s))
		}
	}
	// Beside another script, the twin letters are escaped with the lookalikes:
	// "\u0441\u03bfк" would read as Cyrillic с, Greek ο and Greek κ.
	if got, want := QuoteASCIIShaped("сοк"), `"\u0441\u03bf\u043a"`; got != want {
		t.Errorf("QuoteASCIIShaped(сοк) = %s, want %s", got, want)
	}
}

// The twins table: sorted, of letters of the scripts with lookalikes,
// never naming the letter's own script, and symmetric: when a letter of
// script A looks like one of script B, a letter of B looks like one of A.
func TestReview24cTwinTable(t *testing.T) {
	if !slices.IsSortedFunc(twins[:], func(a, b twinEntry) int { return int(a.r - b.r) }) {
		t.Fatal("twins is not sorted")
	}
	has := map[uint8]uint32{} // script -> scripts its letters look like
	for _, e := range twins {
		sc := scriptOf(e.r)
		if sc == 0 || !unicode.IsLetter(e.r) {
			t.Errorf("%U: not a letter of a script with lookalikes", e.r)
		}
		if e.twins == 0 || e.twins&(1<<sc) != 0 || e.twins>>len(lookalikeScripts) != 0 {
			t.Errorf("%U: twins %x", e.r, e.twins)
		}
		has[sc] |= e.twins
	}
	for sc, set := range has {
		for o := 1; o < len(lookalikeScripts); o++ {
			if set&(1<<o) != 0 && has[uint8(o)]&(1<<sc) == 0 {
				t.Errorf("script %d has letters like script %d's, but not the other way", sc, o)
			}
		}
	}
	cyr, greek, cher, arm := uint32(1)<<scriptOf('д'), uint32(1)<<scriptOf('λ'), uint32(1)<<scriptOf('Ꭺ'), uint32(1)<<scriptOf('ա')
	for _, c := range []struct {
		r    rune
		want uint32
	}{{'П', greek}, {'Π', cyr}, {'Г', greek}, {'Ф', greek}, {'к', greek}, {'т', greek}, {'в', cher}, {'Փ', greek}, {'Φ', cyr | arm}} {
		if twinsOf(c.r)&c.want != c.want {
			t.Errorf("twinsOf(%c) = %x, want %x in it", c.r, twinsOf(c.r), c.want)
		}
	}
	for _, r := range "жщэюяשםד" {
		if twinsOf(r) != 0 {
			t.Errorf("twinsOf(%c) = %x, want none", r, twinsOf(r))
		}
	}
}
