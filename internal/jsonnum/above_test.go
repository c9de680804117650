package jsonnum

import (
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// jsonNumber is the JSON number grammar (RFC 8259, section 6).
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// FuzzAboveExactly checks Above against math/big: for JSON number
// text n and a finite max, it must report exactly whether n's value is
// larger than max as written, the shortest decimal that reads as max
// (review 20: "99.99" was refused by a max of 99.99); for any other text, it must report true (fail
// closed). max is either n's nearest float64 (the case that decides) or
// any finite float64 (negative, zero, -0, subnormal, ±MaxFloat64).
func FuzzAboveExactly(f *testing.F) {
	seeds := []string{
		"0", "-0", "0.0", "-0.0", "0e0", "-0e-0", "0E+5", "1", "-1", "100",
		"100.000000000000001", "99.99999999999999999999", "1e2", "1E+2",
		"1e+0002", "1.00000000000000001e2", "1000e-1", "9007199254740993",
		"9007199254740992", "-9007199254740993", "1e-400", "-1e-400",
		"4.9406564584124654e-324", "5e-324", "2.4703282292062328e-324",
		"2.4703282292062327e-324", "2.2250738585072014e-308",
		"2.2250738585072011e-308", "1.7976931348623157e308",
		"1.7976931348623158e308", "-1.7976931348623158e308",
		"1.7976931348623159e308", "179769313486231570000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
		"1e400", "-1e400", "0.1", "0.30000000000000004", "0.3",
		"123456789012345678901234567890", "1e00000000000000000000001",
		// Not JSON: ParseFloat takes some of them.
		"", "-", "+1", ".5", "5.", "01", "-01", "00", "1e", "1e+", "0x64",
		"0x1p-2", "1_000", "Inf", "+Inf", "-Inf", "NaN", "infinity", "1.5e3.2",
		" 1", "1 ", "1e5x", "--1", "1E-", "0.e1",
	}
	bits := []uint64{
		0, 1 << 63, 1, math.Float64bits(100), math.Float64bits(-100),
		math.Float64bits(math.MaxFloat64), math.Float64bits(-math.MaxFloat64),
		math.Float64bits(math.SmallestNonzeroFloat64), math.Float64bits(0.1),
	}
	for i, s := range seeds {
		f.Add(s, bits[i%len(bits)], i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, n string, maxBits uint64, nearest bool) {
		max := math.Float64frombits(maxBits)
		if nearest {
			v, err := strconv.ParseFloat(n, 64)
			if err != nil {
				return
			}
			max = v
		}
		if math.IsNaN(max) || math.IsInf(max, 0) {
			return
		}
		got := Above(n, max)
		if !jsonNumber.MatchString(n) {
			if !got {
				t.Fatalf("Above(%q, %v) = false for text that is not a JSON number; want true (fail closed)", n, max)
			}
			return
		}
		if exp := strings.IndexAny(n, "eE"); exp >= 0 {
			// math/big would build 10^exp: keep it small. Unit tests cover
			// huge exponents.
			e := strings.TrimLeft(n[exp+1:], "+-0")
			if len(e) > 4 {
				return
			}
		}
		r, ok := new(big.Rat).SetString(n)
		if !ok {
			t.Fatalf("big.Rat cannot read %q", n)
		}
		m, _ := new(big.Rat).SetString(strconv.FormatFloat(max, 'e', -1, 64))
		want := r.Cmp(m) > 0
		if got != want {
			t.Fatalf("Above(%q, %v) = %v, want %v (math/big)", n, max, got, want)
		}
	})
}
