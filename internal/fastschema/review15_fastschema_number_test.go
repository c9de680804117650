package fastschema

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestReview15NumberInRange compares the scanner's bound with the oracle's
// (checkNumber, the root's numberInRange written out with strconv) on
// literals around both edges: 127 to 130 characters, exponents near ±400
// with and without signs and leading zeros, and exponents of any length.
func TestReview15NumberInRange(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 1))
	exps := []string{"", "e", "E", "e+", "e-", "E+", "E-"}
	expDigits := []string{"0", "1", "399", "400", "401", "0400", "0401", "000000000000000000000400", "999", "1000",
		"9223372036854775807", "9223372036854775808", "99999999999999999999999"}
	for range 20000 {
		lit := ""
		if r.IntN(2) == 0 {
			lit = "-"
		}
		mant := 1 + r.IntN(130)
		if r.IntN(3) == 0 {
			mant = 1 + r.IntN(4)
		}
		lit += "1" + strings.Repeat("0", mant-1)
		if r.IntN(2) == 0 {
			lit += "." + strings.Repeat("5", 1+r.IntN(3))
		}
		if e := exps[r.IntN(len(exps))]; e != "" {
			lit += e + expDigits[r.IntN(len(expDigits))]
		}
		if _, ok := parseDecimal([]byte(lit)); !ok {
			t.Fatalf("the generator made %q, not a JSON number", lit)
		}
		if got, want := numberInRange([]byte(lit)), checkNumber(lit) == nil; got != want {
			t.Fatalf("numberInRange(%q) = %v, the oracle says %v", lit, got, want)
		}
	}
}
