package jsonnum

import "testing"

// TestReview38ExponentWithoutDigits pins that a number text whose exponent
// has no digits ("1e", "1E+", "5e-") is not a number: Above counts it as
// above every limit, as its doc says of text it cannot compare, and Float
// refuses it. Reading "1e" as 1 would let a text no JSON parser accepts
// pass a limit of 100.
func TestReview38ExponentWithoutDigits(t *testing.T) {
	for _, n := range []string{"1e", "1E", "1e+", "1e-", "5E-", "0.5e"} {
		if !Above(n, 100) {
			t.Errorf("Above(%q, 100) = false, want true (not a number)", n)
		}
		if f, ok := Float(n); ok {
			t.Errorf("Float(%q) = %v, true; want false", n, f)
		}
	}
}
