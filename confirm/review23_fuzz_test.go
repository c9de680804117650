package confirm

import (
	"encoding/json"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A long number is shown by its value in time linear in its length:
// math/big's Float.Text takes time quadratic in the exponent (seconds for
// 1e-60000, a number of 90 characters), and ParseFloat quadratic in the
// digits. Describe is exported: what it is given need not have passed the
// guard's bound on numbers.
func TestReview23DescribeLongNumberCost(t *testing.T) {
	zeros := strings.Repeat("0", 80)
	for _, tc := range []struct{ num, want string }{
		{"1." + zeros + "e-60000", "≈1e-60000"},
		{"-1." + zeros + "e+2000000", "≈-1e+2000000"},
		{"0." + zeros + "25e-60000", "≈2.5e-60081"},
		{strings.Repeat("9", 512<<10), "≈1e+524288"},
		{"1." + zeros + "e99999999999", "(a number of 94 characters)"},
	} {
		start := time.Now()
		got := Describe("t", json.RawMessage(`{"a":`+tc.num+`}`))
		took := time.Since(start)
		if want := "Run t with a=" + tc.want; got != want {
			t.Errorf("Describe(%.40s…) = %q, want %q", tc.num, got, want)
		}
		// Quadratic time took seconds for the 90 characters of 1e-60000;
		// the 512 KiB of digits take 70 ms, and up to 0.9 s under -race on
		// a loaded host: a bound of a second per 100 KiB.
		limit := 250 * time.Millisecond
		if len(tc.num) > 100<<10 {
			limit = time.Duration(len(tc.num)/(100<<10)) * time.Second
		}
		if took > limit {
			t.Errorf("Describe(%.40s…) took %v", tc.num, took)
		}
	}
}

// The value shown is big.Float's reading of the number, rounded to 17
// significant digits, as before: the same text but where the two
// roundings (to 64 bits, then to 17 digits) of that reading differ from
// the one rounding of the exact value, by one in the last digit.
func TestReview23DescribeLongNumberValue(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 1))
	digits := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		return b.String()
	}
	for i := range 3000 {
		var s string
		switch i % 4 {
		case 0:
			s = digits(1+r.IntN(3)) + "." + digits(81+r.IntN(40))
		case 1:
			s = "0." + strings.Repeat("0", r.IntN(100)) + digits(1+r.IntN(90)) + "e" + strconv.Itoa(r.IntN(2000)-1000)
		case 2:
			s = "1" + digits(82) + "E+" + strconv.Itoa(r.IntN(30))
		default:
			s = digits(1) + "." + strings.Repeat("9", 17+r.IntN(3)) + digits(r.IntN(3)) + strings.Repeat("0", 80) + "e-" + strconv.Itoa(r.IntN(10))
		}
		if r.IntN(2) == 0 {
			s = "-" + s
		}
		if len(s) <= maxDescribeRunes {
			continue
		}
		f, _, err := big.ParseFloat(s, 10, 64, big.ToNearestEven)
		if err != nil {
			t.Fatal(err)
		}
		want := "≈" + f.Text('g', 17)
		got := number(json.Number(s))
		if got == want {
			continue
		}
		g, _, err := big.ParseFloat(strings.TrimPrefix(got, "≈"), 10, 64, big.ToNearestEven)
		if err != nil {
			t.Fatalf("number(%s) = %s: %v", s, got, err)
		}
		exact, _, _ := big.ParseFloat(s, 10, 200, big.ToNearestEven)
		diff := new(big.Float).SetPrec(200).Sub(g, exact)
		tol := new(big.Float).SetPrec(200).Mul(new(big.Float).Abs(exact), big.NewFloat(1e-16))
		if diff.Abs(diff).Cmp(tol) > 0 {
			t.Errorf("number(%s) = %s, want %s", s, got, want)
		}
	}
}
