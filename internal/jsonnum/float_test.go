package jsonnum

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestReview20ParseNumberAgainstBig: Float gives the float64 nearest
// to long JSON numbers, which strconv.ParseFloat misreads past 800 digits,
// as math/big reads them exactly.
func TestReview20ParseNumberAgainstBig(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 20))
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		if r.IntN(2) == 0 {
			b.WriteByte('-')
		}
		digits := 1 + r.IntN(1500)
		point := r.IntN(digits + 1)
		if point == 0 {
			b.WriteByte('0')
		}
		for j := 0; j < digits; j++ {
			if j == point && j > 0 {
				b.WriteByte('.')
			}
			c := byte('0' + r.IntN(10))
			if r.IntN(3) == 0 {
				c = '0' // many zeros, as halfway cases have
			}
			if j == 0 && point > 1 && c == '0' {
				c = '1' // JSON has no leading zero
			}
			if j == 0 && point == 0 {
				b.WriteByte('.')
			}
			b.WriteByte(c)
		}
		if r.IntN(2) == 0 {
			b.WriteString("e" + strconv.Itoa(r.IntN(2400)-1200))
		}
		n := b.String()
		got, ok := Float(n)
		want, _ := new(big.Rat).SetString(n)
		f, _ := want.Float64()
		if math.IsInf(f, 0) {
			if ok {
				t.Fatalf("Float(%.60q, %d bytes) = %v, true; want out of range", n, len(n), got)
			}
			continue
		}
		if !ok || got != f || math.Signbit(got) != math.Signbit(f) && f != 0 {
			t.Fatalf("Float(%.60q, %d bytes) = %v, %v; want %v (math/big)", n, len(n), got, ok, f)
		}
	}
}
