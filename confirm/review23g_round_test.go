package confirm

import (
	"encoding/json"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// refRound is roundNumber's reference: s's exact value (big.Rat, so the
// exponent must be small) rounded half to even to 17 significant digits,
// then written by big.Float's Text('g', 17) (the rounded value has 17
// digits at most, so a 256-bit reading of it rounds back to the same).
func refRound(t testing.TB, s string) string {
	t.Helper()
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		t.Fatalf("big.Rat cannot read %q", s)
	}
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign = "-"
	}
	if r.Sign() == 0 {
		return sign + "0"
	}
	a := new(big.Rat).Abs(r)
	pow := func(n int) *big.Rat { // 10^n
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(n, -n))), nil)
		if n < 0 {
			return new(big.Rat).SetFrac(big.NewInt(1), p)
		}
		return new(big.Rat).SetInt(p)
	}
	// 10^(dp-1) <= a < 10^dp.
	dp := len(a.Num().String()) - len(a.Denom().String())
	for a.Cmp(pow(dp)) >= 0 {
		dp++
	}
	for a.Cmp(pow(dp-1)) < 0 {
		dp--
	}
	scaled := new(big.Rat).Mul(a, pow(17-dp))
	q, m := new(big.Int).QuoRem(scaled.Num(), scaled.Denom(), new(big.Int))
	switch c := new(big.Int).Lsh(m, 1).Cmp(scaled.Denom()); {
	case c > 0, c == 0 && q.Bit(0) == 1:
		q.Add(q, big.NewInt(1))
	}
	digits := q.String()
	if len(digits) == 18 { // 99…9 rounded up to 10^17
		digits, dp = digits[:17], dp+1
	}
	f, _, err := big.ParseFloat("0."+digits+"e"+strconv.Itoa(dp), 10, 256, big.ToNearestEven)
	if err != nil {
		t.Fatal(err)
	}
	return sign + f.Text('g', 17)
}

// roundNumber rounds exactly, half to even, and chooses %e or %f as
// big.Float's Text('g', 17) does: ties, carries through nines, leading
// zeros, exponents written with + and leading zeros, "e" and "E", zero
// written long.
func TestReview23gRoundNumberExact(t *testing.T) {
	z80 := strings.Repeat("0", 80)
	for _, s := range []string{
		"1.00000000000000005", // tie, 17th digit even: down
		"1.00000000000000015", // tie, 17th digit odd: up
		"1.000000000000000050000000000000000000",
		"1.000000000000000150000000000000000000",
		"1.000000000000000050000000000000000001", // above the tie
		"1.000000000000000149999999999999999999", // below the tie
		"12345678901234565000",
		"12345678901234575000",
		"99999999999999999.5",
		"-99999999999999999.5",
		"99999999999999998.5",
		"0.999999999999999995",
		"0.999999999999999985",
		"9999999999999999950000e-30",
		"0.00009999999999999999999",
		"0.0000999999999999999949",
		"0.0001", "0.00001", "0.000099999999999999995",
		"1e16", "1e17", "9999999999999999", "99999999999999999", "999999999999999999",
		"12345678901234567", "123456789012345678", "1234567890123456.7",
		"0." + z80 + "125", "-0." + z80 + "1",
		"1E+0005", "1e-0005", "1.5E0", "1.5e-00004", "15E+0016", "15e+0017",
		"-0", "-0.0", "0." + z80, "-0." + z80 + "e+0100", "0e-5", "-0E+0",
		"1" + z80 + "5", "1" + z80 + ".5e-80", "2.5" + z80 + "e-1000",
	} {
		got, ok := roundNumber(s)
		if want := refRound(t, s); !ok || got != want {
			t.Errorf("roundNumber(%s) = %q, %v; want %q", s, got, ok, want)
		}
	}
	r := rand.New(rand.NewPCG(23, 7))
	digits := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		return b.String()
	}
	for range 5000 {
		whole := digits(1 + r.IntN(20))
		if whole[0] == '0' {
			whole = "0"
		}
		s := whole
		if r.IntN(3) > 0 {
			frac := strings.Repeat("0", r.IntN(6)) + digits(r.IntN(25))
			if r.IntN(2) == 0 { // a tie, or a nine run, at the 17th digit
				frac += strings.Repeat([]string{"9", "0"}[r.IntN(2)], r.IntN(20)) + "5" + strings.Repeat("0", r.IntN(5))
			}
			if frac != "" {
				s += "." + frac
			}
		}
		if r.IntN(2) == 0 {
			s += []string{"e", "E", "e+", "E-", "e-0", "E+00"}[r.IntN(6)] + strconv.Itoa(r.IntN(40))
		}
		if r.IntN(2) == 0 {
			s = "-" + s
		}
		got, ok := roundNumber(s)
		if want := refRound(t, s); !ok || got != want {
			t.Errorf("roundNumber(%s) = %q, %v; want %q", s, got, ok, want)
		}
	}
}

// A long number is shown by its value up to an exponent of ±maxShownExp,
// as Describe's doc says ("with an exponent beyond ±100000000, by its
// length"): 1e+100000000 was shown by its length, 1e-100000001 by its
// value (the bound was on the exponent plus one).
func TestReview23gDescribeExponentBound(t *testing.T) {
	z80 := strings.Repeat("0", 80)
	for _, tc := range []struct{ num, want string }{
		{"1." + z80 + "e100000000", "≈1e+100000000"},
		{"1." + z80 + "E+0100000000", "≈1e+100000000"},
		{"-9." + z80 + "e99999999", "≈-9e+99999999"},
		{"1." + z80 + "e-100000000", "≈1e-100000000"},
		{"0." + z80 + "1e-99999919", "≈1e-100000000"},
		{"99999999999999999.5" + z80 + "e99999983", "≈1e+100000000"}, // carried to the bound
		{"99999999999999999.5" + z80 + "e99999984", ""},              // and beyond it
		{"1." + z80 + "e100000001", ""},
		{"1." + z80 + "e-100000001", ""},
		{"0." + z80 + "1e-99999920", ""},
		{"-1" + z80 + "e99999920", "≈-1e+100000000"},
		{"-1" + z80 + "e99999921", ""},
	} {
		if tc.want == "" {
			tc.want = "(a number of " + strconv.Itoa(len(tc.num)) + " characters)"
		}
		got := Describe("t", json.RawMessage(`{"a":`+tc.num+`}`))
		if want := "Run t with a=" + tc.want; got != want {
			t.Errorf("Describe(%.30s…e%s) = %q, want %q", tc.num, tc.num[strings.LastIndexAny(tc.num, "eE")+1:], got, want)
		}
	}
}

// FuzzReview23gRoundNumber compares roundNumber with the exact reference
// on numbers built from the fuzzer's digits and a small exponent.
func FuzzReview23gRoundNumber(f *testing.F) {
	f.Add("99999999999999999", "5", int16(0), uint8(0))
	f.Add("1", "00000000000000005", int16(-3), uint8(1))
	f.Add("0", "0000123450000000000000005", int16(20), uint8(2))
	f.Fuzz(func(t *testing.T, whole, frac string, exp int16, form uint8) {
		keep := func(s string) string {
			return strings.Map(func(r rune) rune {
				if r >= '0' && r <= '9' {
					return r
				}
				return -1
			}, s)
		}
		whole, frac = keep(whole), keep(frac)
		if len(whole)+len(frac) > 400 {
			return
		}
		if whole == "" || whole[0] == '0' {
			whole = "0"
		}
		s := whole
		if frac != "" {
			s += "." + frac
		}
		if form&1 == 1 || exp != 0 {
			n, sign := int(exp%3000), ""
			if n < 0 {
				n, sign = -n, "-"
			} else if form&2 == 2 {
				sign = "+"
			}
			s += []string{"e", "E"}[form>>2&1] + sign + strings.Repeat("0", int(form>>4&3)) + strconv.Itoa(n)
		}
		if form&8 == 8 {
			s = "-" + s
		}
		got, ok := roundNumber(s)
		if want := refRound(t, s); !ok || got != want {
			t.Errorf("roundNumber(%s) = %q, %v; want %q", s, got, ok, want)
		}
	})
}
