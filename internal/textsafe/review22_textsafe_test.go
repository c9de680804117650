package textsafe

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReview22MongolianVariationSelectors: the Mongolian free variation
// selectors are default-ignorable as the other variation selectors are: a
// renderer shows them as nothing, so "admin_reset\u180b" read as
// admin_reset in a log line that Plain let through unescaped.
func TestReview22MongolianVariationSelectors(t *testing.T) {
	for _, r := range []rune{0x180B, 0x180C, 0x180D, 0x180F} {
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
	// Mongolian letters, and emoji with U+FE0F, are kept.
	for _, s := range []string{"\u182e\u1823\u1829", "\u2764\ufe0f"} {
		if got := Clean(s, 100); got != s || !Plain(s) {
			t.Errorf("Clean(%q) = %q, Plain %v; want it kept", s, got, Plain(s))
		}
	}
}

// TestReview22ASCIIJSONWhitespace: JSON text with white space between its
// tokens (json.MarshalIndent's) reads back as the same value, and holds
// printable ASCII only; a line feed written as \u000a outside a string
// made it no JSON at all.
func TestReview22ASCIIJSONWhitespace(t *testing.T) {
	in := map[string]any{"k\u200b": []any{"\u202ex", 1.5}, "b": map[string]any{"c": "\r\n\t"}}
	for _, indent := range []string{"\t", "  "} {
		js, err := json.MarshalIndent(in, "", indent)
		if err != nil {
			t.Fatal(err)
		}
		js = append(js, "\r\n"...)
		out := ASCIIJSON(string(js))
		for i := 0; i < len(out); i++ {
			if out[i] < 0x20 || out[i] >= 0x7f {
				t.Fatalf("ASCIIJSON(%q) = %q: byte %#x", js, out, out[i])
			}
		}
		var back any
		if err := json.Unmarshal([]byte(out), &back); err != nil {
			t.Fatalf("ASCIIJSON(%q) = %q: %v", js, out, err)
		}
		if diff := cmp.Diff(in, back); diff != "" {
			t.Errorf("ASCIIJSON(%q) read back (-want +got):\n%s", js, diff)
		}
	}
}

// TestReview22WordLookalikes: letters and digits shaped like the
// punctuation Word promises a word does not hold: modifier letters that
// are quotes, primes and commas, a click letter that is an exclamation
// mark, the saltillo apostrophe, the Arabic-Indic zero that is a dot.
func TestReview22WordLookalikes(t *testing.T) {
	for _, s := range []string{
		"ok\u02ba", "\u02bcquoted\u02bc", "ok\u02ee", "a\u02cfb", "a\ua4f9b", "done\u01c3", "a\u01c0b",
		"it\ua78cs", "done\u0660", "done\u06f0",
	} {
		if Word(s) {
			t.Errorf("Word(%q) = true, want false", s)
		}
	}
	for _, s := range []string{"order_id", "é", "Straße", "заказ", "注文", "۱۲۳", "v1.2", "a@b", "x…"} {
		if !Word(s) {
			t.Errorf("Word(%q) = false, want true", s)
		}
	}
}

// TestReview22QuoteShaped: QuoteShaped escapes the quotes, primes and
// commas of other scripts, and letters shaped like them, and keeps letters
// of any script and the "…" of a cut.
func TestReview22QuoteShaped(t *testing.T) {
	for in, want := range map[string]string{
		"okʺ, amount=1, zʺ": `"ok\u02ba, amount=1, z\u02ba"`,
		"say “hi”":          `"say \u201chi\u201d"`,
		"próxima entrega":   `"próxima entrega"`,
		"cut…":              `"cut…"`,
		`a"b`:               `"a\"b"`,
	} {
		if got := QuoteShaped(in); got != want {
			t.Errorf("QuoteShaped(%q) = %s, want %s", in, got, want)
		}
	}
}
