package namekey

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// review24Ignorables are default-ignorable characters a spelling may carry
// anywhere: the key leaves them out.
var review24Ignorables = []string{"\u00ad", "\u034f", "\u200b", "\u200d", "\u2060", "\ufe0f", "\U000e0001", "\U000e0100"}

// review24Spellings returns other spellings of s that must have s's key:
// Go's lower-, upper- and title-casing, and s with a default-ignorable
// character put between two of its characters (seed picks where and
// which).
func review24Spellings(s string, seed uint) []string {
	out := []string{strings.ToLower(s), strings.ToUpper(s), strings.ToTitle(s)}
	var cuts []int
	for i := range s { // every character's start, each invalid byte's too
		cuts = append(cuts, i)
	}
	cuts = append(cuts, len(s))
	at := cuts[seed%uint(len(cuts))]
	ign := review24Ignorables[(seed/uint(len(cuts)))%uint(len(review24Ignorables))]
	return append(out, s[:at]+ign+s[at:])
}

// review24CheckAppend fails unless Append(dst, s, limit) keeps dst and
// appends a prefix of s's whole key (whole) that is whole itself or
// longer than limit, and whole itself when whole is no longer than limit.
func review24CheckAppend(t *testing.T, dst, s string, limit int, whole string) {
	t.Helper()
	got := string(Append([]byte(dst), s, limit))
	if !strings.HasPrefix(got, dst) {
		t.Fatalf("Append(%q, %q, %d) = %q: dst not kept", dst, s, limit, got)
	}
	cut := got[len(dst):]
	if !strings.HasPrefix(whole, cut) {
		t.Fatalf("Append(%q, %q, %d) appended %q, not a prefix of the whole key %q", dst, s, limit, cut, whole)
	}
	if cut != whole && len(cut) <= limit {
		t.Fatalf("Append(%q, %q, %d) appended %q: cut at %d bytes, no longer than the limit (whole key %q)", dst, s, limit, cut, len(cut), whole)
	}
}

// FuzzReview24Key holds the name key to its contract: Append never panics
// whatever the limit, keeps dst (one ending in "I" too, before a
// combining dot above), and appends the whole key or a prefix of it longer
// than the limit; the key of a key is itself; Go's case mappings and
// default-ignorable characters do not change a key; and Append into a
// stack buffer with the limit of another name's key (as the limiter and
// the policy compare) gives that key exactly when the two names' keys are
// equal.
func FuzzReview24Key(f *testing.F) {
	for _, s := range []string{
		"", "search", "SEARCH", "ſearch", "search\u200b", "\u0130ptal_siparis", "i\u0307ptal", "I\u0307\u0307",
		"ß", "ẞ", "ﬃ", "\u0390", "\u1fb7", "K", "\u212a", "\xff", "a\xffb\xc3", "\xe2\x80", "\u0345", "\u0399",
		"\ua7cb", "\u0264", "\ua7dc", "\U00010d70", "\U00016ebb", "\u1c8a", "\u01c5", "\u03c2",
		strings.Repeat("ﬃ", 100), strings.Repeat("\u0390", 90), strings.Repeat("a", 300),
	} {
		f.Add(s, "search", "", 3, uint(7))
		f.Add(s, strings.ToUpper(s), "I", len(s), uint(1))
	}
	f.Fuzz(func(t *testing.T, s, other, dst string, limit int, seed uint) {
		whole := Of(s)
		if !utf8.ValidString(whole) {
			t.Fatalf("Of(%q) = %q: not UTF-8", s, whole)
		}
		if len(whole) > 3*len(s) {
			t.Fatalf("Of(%q) = %q: %d bytes, over three a byte of the name", s, whole, len(whole))
		}
		if again := Of(whole); again != whole {
			t.Fatalf("Of(%q) = %q, but Of(%q) = %q", s, whole, whole, again)
		}
		// Any limit, the negative ones too.
		for _, l := range []int{limit, limit % 300, -1, 0, 1, len(whole) - 1, len(whole), len(whole) + 1} {
			review24CheckAppend(t, dst, s, l, whole)
		}
		for _, sp := range review24Spellings(s, seed) {
			if k := Of(sp); k != whole {
				t.Fatalf("Of(%q) = %q, but its spelling %q has %q", s, whole, sp, k)
			}
		}
		// The comparison of the limiter's spells and the policy's lookups.
		want := Of(other)
		var buf [BufSize]byte
		got := string(Append(buf[:0], s, len(want)))
		if (got == want) != (whole == want) {
			t.Fatalf("Append(buf, %q, %d) = %q against %q's key %q; whole key %q", s, len(want), got, other, want, whole)
		}
		if got := string(Append(buf[:0], s, len(whole))); got != whole {
			t.Fatalf("Append(buf, %q, %d) = %q, Of = %q", s, len(whole), got, whole)
		}
	})
}
