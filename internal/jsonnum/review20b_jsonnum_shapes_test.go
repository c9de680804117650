package jsonnum

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// exactDecimal returns digits D and exponent E with f = D × 10^E exactly
// (f finite, non-negative): a float64 is m × 2^e, and 2^-k = 5^k / 10^k.
func exactDecimal(r *big.Rat) (string, int) {
	// r's denominator is a power of two 2^k: r = num × 5^k / 10^k.
	k := r.Denom().BitLen() - 1
	n := new(big.Int).Mul(r.Num(), new(big.Int).Exp(big.NewInt(5), big.NewInt(int64(k)), nil))
	return n.String(), -k
}

// render writes D × 10^E as JSON number text in one of several shapes:
// the point placed among the digits (leading zeros "0.000…" when needed),
// or the digits with extra leading or trailing zeros moved by the exponent
// (so that thousands of digits come before the point), or the exponent
// near the reader's clamps.
func render(r *rand.Rand, neg bool, d string, e int) string {
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	d = strings.TrimLeft(d, "0")
	if d == "" {
		d = "0"
	}
	switch r.IntN(4) {
	case 0: // plain: the point among the digits
		p := len(d) + e // digits before the point
		switch {
		case p <= 0:
			b.WriteString("0." + strings.Repeat("0", -p) + d)
		case p >= len(d):
			b.WriteString(d + strings.Repeat("0", p-len(d)))
		default:
			b.WriteString(d[:p] + "." + d[p:])
		}
	case 1: // trailing zeros, exponent makes up for them: long integer part
		z := r.IntN(2000)
		b.WriteString(d + strings.Repeat("0", z) + "e" + strconv.Itoa(e-z))
	case 2: // leading zeros after "0."
		z := r.IntN(2000)
		b.WriteString("0." + strings.Repeat("0", z) + d + "E" + strconv.Itoa(e+z+len(d)))
	default: // both, with a mantissa point inside and "+" exponents
		z := r.IntN(1200)
		x := e - z
		s := d + strings.Repeat("0", z)
		p := 1 + r.IntN(len(s))
		sign := ""
		if x+len(s)-p >= 0 {
			sign = "+"
		}
		b.WriteString(s[:p] + "." + s[p:] + strings.Repeat("0", r.IntN(900)) + "e" + sign + strconv.Itoa(x+len(s)-p))
	}
	return b.String()
}

// TestReview20bFloatHalfwayShapes: Float against math/big on the numbers
// that decide rounding: exact halfway points between two float64s (up to
// 767 significant digits for subnormals), and one unit of a far digit above
// and below them, in every shape render writes, including 800/801 bytes.
func TestReview20bFloatHalfwayShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 0xb))
	pick := func() float64 {
		switch r.IntN(5) {
		case 0: // subnormal
			return math.Float64frombits(r.Uint64N(1 << 52))
		case 1: // near the top
			return math.Float64frombits(0x7fe0000000000000 + r.Uint64N(1<<52) - 1)
		case 2: // around 1
			return math.Float64frombits(0x3fe0000000000000 + r.Uint64N(1<<53))
		default:
			return math.Float64frombits(r.Uint64N(0x7ff0000000000000))
		}
	}
	check := func(n string) {
		t.Helper()
		got, ok := Float(n)
		want, _ := new(big.Rat).SetString(n)
		f, _ := want.Float64()
		if math.IsInf(f, 0) {
			if ok {
				t.Fatalf("Float(%.80q…, %d bytes) = %v, true; want out of range", n, len(n), got)
			}
			return
		}
		if f == 0 && strings.HasPrefix(n, "-") {
			f = math.Copysign(0, -1) // math/big has no -0
		}
		if !ok || got != f || math.Signbit(got) != math.Signbit(f) {
			t.Fatalf("Float(%.80q…, %d bytes) = %v, %v; want %v (math/big)", n, len(n), got, ok, f)
		}
	}
	for i := 0; i < 1500; i++ {
		x := pick()
		y := math.Nextafter(x, math.Inf(1))
		neg := r.IntN(2) == 0
		// h = x + ulp/2, the halfway point to the next float64 (past
		// MaxFloat64: to 2^1024, where numbers round to +Inf).
		ulp := new(big.Rat)
		if math.IsInf(y, 0) {
			ulp.SetFloat64(x - math.Nextafter(x, 0))
		} else {
			ulp.SetFloat64(y - x)
		}
		h := new(big.Rat).SetFloat64(x)
		h.Add(h, ulp.Quo(ulp, big.NewRat(2, 1)))
		d, e := exactDecimal(h)
		check(render(r, neg, d, e))
		k := 1 + r.IntN(60)
		up := d + strings.Repeat("0", k-1) + "1"
		check(render(r, neg, up, e-k))
		down := new(big.Int)
		down.SetString(d+strings.Repeat("0", k), 10)
		down.Sub(down, big.NewInt(1))
		check(render(r, neg, down.String(), e-k))
	}
	// Exactly 800 and 801 bytes, around the length where Float stops
	// trusting ParseFloat, with the value in the integer part.
	for _, size := range []int{799, 800, 801, 802} {
		for _, tail := range []string{"e-780", "e-700", "e-1090", "e-1400", "e+0"} {
			for _, lead := range []string{"", "-"} {
				body := size - len(lead) - len(tail)
				check(lead + "1" + strings.Repeat("0", body-1) + tail)
				check(lead + "9" + strings.Repeat("9", body-1) + tail)
				check(lead + "0." + strings.Repeat("0", body-3) + "1" + strings.Replace(tail, "-", "+", 1))
			}
		}
	}
	// Zeros in every shape keep their sign; exponents near and past the
	// clamps give 0 or out of range.
	for _, n := range []string{
		"-0", "0", "-0.0", "-" + strings.Repeat("0", 1) + "." + strings.Repeat("0", 900),
		"0." + strings.Repeat("0", 900) + "e-99999", "-0." + strings.Repeat("0", 900) + "1e-9000",
		"1" + strings.Repeat("0", 900) + "e-9999", "1" + strings.Repeat("0", 900) + "e-10900",
		"1" + strings.Repeat("0", 900) + "e-10200", "1" + strings.Repeat("0", 900) + "e-9300",
		"0." + strings.Repeat("0", 900) + "1e+9210", "0." + strings.Repeat("0", 900) + "1e+9209",
		"0." + strings.Repeat("0", 9000) + "1e+9001", "1" + strings.Repeat("0", 9000) + "e-9000",
		"2" + strings.Repeat("0", 9000) + "e-9324", "3" + strings.Repeat("0", 9000) + "e-9324",
		"1" + strings.Repeat("0", 9000) + "e-8692", "1.7976931348623159" + strings.Repeat("0", 900) + "e308",
	} {
		check(n)
	}
	// Exponents math/big cannot build.
	for n, want := range map[string]float64{
		"-0e99999999999999999999":                                    math.Copysign(0, -1),
		"-0." + strings.Repeat("0", 900) + "e-99999999999999999999":  math.Copysign(0, -1),
		"1" + strings.Repeat("0", 900) + "e-99999999999999999999":    0,
		"-0." + strings.Repeat("0", 900) + "1e-99999999999999999999": math.Copysign(0, -1),
		"0." + strings.Repeat("0", 900) + "1e+99999999999999999999":  math.Inf(1),
		"1e99999999999999999999":                                     math.Inf(1),
	} {
		got, ok := Float(n)
		if math.IsInf(want, 0) {
			if ok {
				t.Errorf("Float(%.40q…) = %v, true; want out of range", n, got)
			}
			continue
		}
		if !ok || got != want || math.Signbit(got) != math.Signbit(want) {
			t.Errorf("Float(%.40q…) = %v, %v; want %v", n, got, ok, want)
		}
	}
}

// TestReview20bAboveInfiniteMax: every number is below +Inf, above -Inf;
// text that is not a JSON number is above any max (fail closed).
func TestReview20bAboveInfiniteMax(t *testing.T) {
	for _, n := range []string{"0", "-0", "5", "1e308", "1e400", "-1e400", "1" + strings.Repeat("0", 1000)} {
		if Above(n, math.Inf(1)) {
			t.Errorf("Above(%.20q, +Inf) = true, want false", n)
		}
		if !Above(n, math.Inf(-1)) {
			t.Errorf("Above(%.20q, -Inf) = false, want true", n)
		}
		if !Above(n, math.NaN()) {
			t.Errorf("Above(%.20q, NaN) = false, want true", n)
		}
	}
	for _, n := range []string{"", "+5", "Inf", "+Inf", "NaN", "0x10"} {
		if !Above(n, math.Inf(1)) {
			t.Errorf("Above(%q, +Inf) = false, want true", n)
		}
	}
}
