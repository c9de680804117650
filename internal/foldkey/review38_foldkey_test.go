package foldkey

import (
	"bytes"
	"testing"
)

// TestReview38AppendEveryASCIIPair pins Append on every pair of ASCII
// bytes: two one-byte keys fold alike exactly when bytes.EqualFold says
// so. The table tests and the fuzz seeds never held a 'z': Append's ASCII
// path could have left 'z' unfolded, and then "z" and "Z", one field to
// encoding/json, passed the duplicate-member check as two.
func TestReview38AppendEveryASCIIPair(t *testing.T) {
	for a := range 128 {
		for b := range 128 {
			ka, kb := []byte{byte(a)}, []byte{byte(b)}
			got := bytes.Equal(Append(nil, ka), Append(nil, kb))
			if want := bytes.EqualFold(ka, kb); got != want {
				t.Errorf("Append(%q) == Append(%q): %v, want %v (bytes.EqualFold)", ka, kb, got, want)
			}
		}
	}
}

// TestReview38AppendNameAgreesWithEqualNameOnEveryByte pins AppendName's
// promise that two names fold alike exactly when EqualName reports them
// equal, on every pair of one-byte names, the bytes that are not UTF-8
// (0x80 to 0xff, each U+FFFD to encoding/json) included: the guard
// compares names with one and looks them up by the other, so a byte the
// two read differently would be one name to the lookup and two to the
// comparison.
func TestReview38AppendNameAgreesWithEqualNameOnEveryByte(t *testing.T) {
	for a := range 256 {
		for b := range 256 {
			ka, kb := []byte{byte(a)}, []byte{byte(b)}
			folded := bytes.Equal(AppendName(nil, ka), AppendName(nil, kb))
			if eq := EqualName(ka, kb); folded != eq {
				t.Errorf("AppendName(%q) == AppendName(%q): %v, but EqualName = %v", ka, kb, folded, eq)
			}
		}
	}
}
