package textsafe

import "testing"

func TestClean(t *testing.T) {
	tests := []struct {
		name, in string
		max      int
		want     string
	}{
		{"plain", "refund", 10, "refund"},
		{"controls", "a\x00b\x1b[2Jc\n", 10, "ab[2Jc"},
		{"bidi_override", "pay\u202eyrev", 10, "payyrev"},
		{"separators", "a\u2028b\u2029c", 10, "abc"},
		{"supplementary_variation_selectors", "a\U000E0100b\U000E01EFc", 10, "abc"},
		{"invalid_utf8", "a\xffb", 10, "ab"},
		{"real_replacement_char_kept", "a\uFFFDb", 10, "a\uFFFDb"},
		{"truncated", "abcdef", 3, "abc…"},
		{"exact_length", "abc", 3, "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Clean(tt.in, tt.max); got != tt.want {
				t.Errorf("Clean(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
		})
	}
}

func TestCleanLines(t *testing.T) {
	for in, want := range map[string]string{
		"Refund 5.00\nto CUST-1":    "Refund 5.00\nto CUST-1",
		"a\tb":                      "a\tb",
		"pay \u202eyrev\r\x1b[2Jok": "pay yrev[2Jok",
		"a\u2028b\xffc\u200bd":      "abcd",
		"line\u2029two":             "linetwo",
	} {
		if got := CleanLines(in, 100); got != want {
			t.Errorf("CleanLines(%q) = %q, want %q", in, got, want)
		}
	}
	if got := CleanLines("ab\ncd", 3); got != "ab\n…" {
		t.Errorf("CleanLines cut = %q", got)
	}
}
