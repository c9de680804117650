package textsafe

import (
	"strings"
	"testing"
)

func TestQuotedCutsAtCharacters(t *testing.T) {
	for _, tc := range []struct {
		s    string
		max  int
		want string
	}{
		{"echo", 128, `"echo"`},
		{"evil\u202egnp", 128, `"evil\u202egnp"`},
		{"a\x00", 128, `"a\x00"`},
		{strings.Repeat("x", 130), 128, `"` + strings.Repeat("x", 128) + `"...`},
		{"ab\u00e9", 3, `"ab"...`}, // é is two bytes: not cut inside it
		{"\U0001F600\U0001F600", 5, `"\U0001f600"...`},
	} {
		if got := Quoted(tc.s, tc.max); got != tc.want {
			t.Errorf("Quoted(%q, %d) = %s, want %s", tc.s, tc.max, got, tc.want)
		}
	}
	if s, more := CutBytes("abc", 3); s != "abc" || more {
		t.Errorf("CutBytes(abc, 3) = %q, %v", s, more)
	}
}
