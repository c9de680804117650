package policy

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// slowNameError is nameError without its ASCII fast path.
func slowNameError(s string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for i, r := range s {
		if invisible(r) && !joinerWithinWord(s, i, r) {
			return "contains a control or invisible character"
		}
	}
	if strings.TrimSpace(s) != s {
		return "has white space at an end"
	}
	return ""
}

// TestNameErrorFastPath: the ASCII fast path judges every ASCII byte, at
// the start, inside and at the end of a name, as the Unicode path does.
func TestNameErrorFastPath(t *testing.T) {
	for c := 0; c < utf8.RuneSelf; c++ {
		b := string(rune(c))
		for _, s := range []string{b, b + "ab", "a" + b + "b", "ab" + b, b + "é", "é" + b} {
			if got, want := nameError(s), slowNameError(s); got != want {
				t.Errorf("nameError(%q) = %q, want %q", s, got, want)
			}
		}
	}
	if got := nameError(""); got != "" {
		t.Errorf("nameError(\"\") = %q", got)
	}
}

func BenchmarkCheckName(b *testing.B) {
	for b.Loop() {
		_ = CheckName("get_customer_record")
	}
}
