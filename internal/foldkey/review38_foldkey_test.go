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
