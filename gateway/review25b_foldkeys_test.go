package gateway

import (
	"strings"
	"testing"
)

// TestReview25bFoldsToKnownLong: a key padded with '_' and '-' beyond any
// buffer, or spelled with letters that fold onto ASCII ones in three bytes
// (K, U+212A), still folds onto the longest known name; a key one letter
// longer does not.
func TestReview25bFoldsToKnownLong(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{strings.Repeat("_", 200) + "instructions" + strings.Repeat("-", 200), true},
		{"i_n_s_t_r_u_c_t_i_o_n_s", true},
		{"INSTRUCTIONS", true},
		{"in\u017ftructions", true}, // ſ
		{"instructions\x00x", true}, // cut at the NUL
		{"instructionss", false},
		{"\u212aeys", false},
	} {
		if got := foldsToKnown([]byte(tc.key), listingKeys[:]); got != tc.want {
			t.Errorf("foldsToKnown(%.40q, listingKeys) = %v, want %v", tc.key, got, tc.want)
		}
	}
	// Three-byte letters throughout: "\u212a" folds onto k.
	if !foldsToKnown([]byte("to\u212aens"), []string{"tokens"}) {
		t.Error("to\u212aens does not fold onto tokens")
	}
}
