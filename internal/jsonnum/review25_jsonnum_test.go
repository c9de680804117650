package jsonnum

import (
	"encoding/json"
	"math"
	"math/big"
	"strings"
	"testing"
)

// FuzzReview25Float: Float refuses text that is not a JSON number (what
// strconv.ParseFloat takes besides: "+1", ".5", "0x1p-2", "1_000", "Inf",
// "01"), and gives any other the float64 math/big rounds it to, with the
// sign of a zero, and false exactly when that is beyond float64's range;
// for text of up to 800 bytes that is what encoding/json decodes into a
// float64, and false is its error.
func FuzzReview25Float(f *testing.F) {
	for _, s := range []string{
		"0", "-0", "0.0", "-0.0", "1E+2", "1e-2", "1e400", "-1e400", "1e-400", "-1e-400",
		"01", "-01", "00", "+1", ".5", "5.", "0x1p-2", "1_000", "Inf", "NaN", "-", "",
		"1e", "1e+", " 1", "1 ", "9007199254740993", "1.7976931348623157e308",
		"1.7976931348623158e308", "1.797693134862315808e308", "4.9e-324", "2.4703282292062328e-324",
		"2.4703282292062327e-324", "123456789012345678901234567890e-10", "0e99999999999999999999",
		"1e99999999999999999999", "1e-99999999999999999999", "-0e-5", "1e0000000000000000000308",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, n string) {
		got, ok := Float(n)
		if !jsonNumber.MatchString(n) {
			if ok {
				t.Fatalf("Float(%q) = %v, true for text that is not a JSON number", n, got)
			}
			return
		}
		if len(n) <= 800 {
			var v float64
			err := json.Unmarshal([]byte(n), &v)
			if ok != (err == nil) || ok && math.Float64bits(v) != math.Float64bits(got) {
				t.Fatalf("Float(%q) = %v, %v; encoding/json decodes %v, %v", n, got, ok, v, err)
			}
		}
		if exp := strings.IndexAny(n, "eE"); exp >= 0 {
			if e := strings.TrimLeft(n[exp+1:], "+-0"); len(e) > 4 {
				return // math/big would build 10^e
			}
		}
		r, _ := new(big.Rat).SetString(n)
		want, _ := r.Float64()
		if math.IsInf(want, 0) {
			if ok {
				t.Fatalf("Float(%q) = %v, true; want out of range", n, got)
			}
			return
		}
		if want == 0 && strings.HasPrefix(n, "-") {
			want = math.Copysign(0, -1)
		}
		if !ok || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("Float(%q) = %v, %v; want %v (math/big)", n, got, ok, want)
		}
	})
}
