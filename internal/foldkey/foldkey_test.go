package foldkey

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

func TestAppend(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"seats", "SEATS", true},
		{"seats", "Seats", true},
		{"seats", "\u017feats", true}, // long s
		{"kind", "\u212aind", true},   // Kelvin sign
		{"straße", "STRASSE", false},  // simple folding only, as encoding/json
		{"\xff", "\xfe", true},        // both decode to U+FFFD
		{"a", "b", false},
		{"", "", true},
		{"Σ", "ς", true},
		{"Σ", "σ", true},
	} {
		fa, fb := Append(nil, []byte(tc.a)), Append(nil, []byte(tc.b))
		if got := bytes.Equal(fa, fb); got != tc.same {
			t.Errorf("%q and %q: folded alike = %v, want %v", tc.a, tc.b, got, tc.same)
		}
		if eq := bytes.EqualFold([]byte(tc.a), []byte(tc.b)); eq != tc.same {
			t.Errorf("%q and %q: bytes.EqualFold = %v, the test's expectation is wrong", tc.a, tc.b, eq)
		}
	}
}

// FuzzAppend checks that folded forms are equal exactly when bytes.EqualFold
// says the keys are.
func FuzzAppend(f *testing.F) {
	f.Add([]byte("seats"), []byte("\u017fEATS"))
	f.Add([]byte("\u212a"), []byte("k"))
	f.Add([]byte("\xff"), []byte("\xc3"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		same := bytes.Equal(Append(nil, a), Append(nil, b))
		if eq := bytes.EqualFold(a, b); eq != same {
			t.Fatalf("%q and %q: EqualFold %v, folded forms equal %v", a, b, eq, same)
		}
		if !utf8.Valid(Append(nil, a)) {
			t.Fatalf("folded form of %q is not UTF-8", a)
		}
	})
}
