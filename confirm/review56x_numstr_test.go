package confirm

import (
	"encoding/json"
	"strings"
	"testing"
)

// A string that spells a number followed by spaces (Python's float and
// JavaScript's Number read it, trimmed) is not shown by a value it does not
// have: "1.000…e9" and eight spaces is a billion, not "≈1"; "1" and 100
// spaces is one, not about 1e100.
func TestReview56xNumberStringTrailingSpaces(t *testing.T) {
	for _, c := range []struct{ s, want string }{
		{"1." + strings.Repeat("0", 78) + "e9" + strings.Repeat(" ", 8), `amount="≈1000000000" and 8 white space characters`},
		{"1" + strings.Repeat(" ", 100), `amount="≈1" and 100 white space characters`},
	} {
		b, _ := json.Marshal(map[string]any{"amount": c.s})
		if d := Describe("refund", b); d != "Run refund with "+c.want {
			t.Errorf("Describe(%q) = %q, want %q", c.s, d, "Run refund with "+c.want)
		}
	}
}
