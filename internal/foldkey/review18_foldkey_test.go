package foldkey

import (
	"bytes"
	"testing"
	"unicode"
	"unicode/utf8"
)

// jsonFoldRune is encoding/json's foldRune (fold.go, Go 1.21 and later),
// copied: the smallest rune of r's simple-folding orbit, found by walking
// up the orbit until it wraps.
func jsonFoldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

// TestReview18RuneIsEncodingJSONs: Rune agrees with encoding/json's rule
// on every code point, surrogates and U+FFFD included.
func TestReview18RuneIsEncodingJSONs(t *testing.T) {
	bad := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if got, want := Rune(r), jsonFoldRune(r); got != want {
			t.Errorf("Rune(%U) = %U, encoding/json folds it to %U", r, got, want)
			if bad++; bad > 10 {
				t.FailNow()
			}
		}
	}
}

// TestReview18Corners: the corners of simple folding that encoding/json
// matches (Kelvin sign, long s, final sigma, Å and the Angstrom sign, the
// three thetas) and those it does not (ß and SS, the Turkish dotted and
// dotless i: full or special folding only), with invalid UTF-8 and
// encoded surrogates as U+FFFD per byte.
func TestReview18Corners(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"\u212a", "k", true},
		{"\u212a", "K", true},
		{"\u017f", "S", true},
		{"ς", "Σ", true},
		{"\u212b", "å", true},
		{"ϑ", "θ", true},
		{"ϴ", "θ", true},
		{"ß", "ss", false},
		{"ẞ", "ß", true},
		{"ı", "i", false},
		{"İ", "i", false},
		{"ǅ", "ǆ", true},
		{"ǅ", "Ǆ", true},
		{"\xed\xa0\x80", "\ufffd\ufffd\ufffd", true},
		{"\xc0\xaf", "\ufffd\ufffd", true},
		{"\xc0\xaf", "/", false},
		{"\xe2\x82", "\ufffd\ufffd", true},
		{"a\x00", "A\x00", true},
	} {
		fa, fb := Append(nil, []byte(tc.a)), Append(nil, []byte(tc.b))
		if got := bytes.Equal(fa, fb); got != tc.same {
			t.Errorf("%+q and %+q: folded alike = %v, want %v", tc.a, tc.b, got, tc.same)
		}
		if !utf8.Valid(fa) {
			t.Errorf("Append(%+q) = %+q, not UTF-8", tc.a, fa)
		}
	}
}
