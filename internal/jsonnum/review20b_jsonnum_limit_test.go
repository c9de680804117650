package jsonnum

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestReview20bLimitAsShortestDecimal checks "a limit is the shortest
// decimal of Max" against math/big, for limits a rules file may write
// (short decimals, integers past 2^53, long and halfway texts) and calls
// near them in every shape: Above(n, Max) is exactly n > S, the shortest
// decimal of Max; a number Above allows never has a float64 above Max;
// one whose float64 is below Max is always allowed; and the text a rules
// file wrote is allowed unless it has more digits than S and exceeds it
// (the documented "max": 99.990000000000001 that reads as 99.99).
func TestReview20bLimitAsShortestDecimal(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 0xb1))
	digits := func(k int) string {
		b := make([]byte, k)
		for i := range b {
			b[i] = byte('0' + r.IntN(10))
		}
		b[0] = byte('1' + r.IntN(9))
		return string(b)
	}
	rat := func(s string) *big.Rat {
		x, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("big.Rat cannot read %q", s)
		}
		return x
	}
	refusedAsWritten := 0
	for i := 0; i < 500; i++ {
		// The limit as a rules file writes it.
		var w string
		switch r.IntN(4) {
		case 0: // a short decimal: 99.99, 0.3, 1e22
			w = render(r, r.IntN(4) == 0, digits(1+r.IntN(6)), r.IntN(40)-30)
		case 1: // an integer near 2^53 or beyond
			w = strconv.FormatUint(1<<53+r.Uint64N(1<<20), 10)
		case 2: // more digits than a float64 holds
			w = render(r, r.IntN(4) == 0, digits(17+r.IntN(30)), r.IntN(600)-300)
		default: // a float64 written exactly (up to 767 digits)
			f := math.Float64frombits(r.Uint64N(0x7ff0000000000000))
			d, e := exactDecimal(new(big.Rat).SetFloat64(f))
			w = render(r, false, d, e)
		}
		max, ok := Float(w)
		if !ok {
			continue
		}
		s := strconv.FormatFloat(max, 'e', -1, 64)
		S := rat(s)
		W := rat(w)
		// Calls near the limit.
		unit := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(20+r.IntN(800))), nil))
		unit.Mul(unit, new(big.Rat).Abs(S))
		cands := []*big.Rat{W, S, new(big.Rat).Add(S, unit), new(big.Rat).Sub(S, unit), new(big.Rat).Add(W, unit), new(big.Rat).Sub(W, unit)}
		for _, nb := range []float64{math.Nextafter(max, math.Inf(1)), math.Nextafter(max, math.Inf(-1))} {
			if math.IsInf(nb, 0) {
				continue
			}
			h := new(big.Rat).Add(new(big.Rat).SetFloat64(max), new(big.Rat).SetFloat64(nb))
			h.Quo(h, big.NewRat(2, 1)) // halfway: rounds to the even one
			cands = append(cands, h, new(big.Rat).SetFloat64(nb), rat(strconv.FormatFloat(nb, 'e', -1, 64)))
		}
		texts := []string{w, s}
		for _, c := range cands {
			neg := c.Sign() < 0
			a := new(big.Rat).Abs(c)
			// a = num/den; write it as digits × 10^-k when den divides 10^k.
			// den is 2^a × 5^b: k is the larger of a and b.
			den := a.Denom()
			k := int(den.TrailingZeroBits())
			rest := new(big.Int).Rsh(den, uint(k))
			five, m := big.NewInt(5), new(big.Int)
			for b := 1; rest.Cmp(big.NewInt(1)) > 0; b++ {
				rest.QuoRem(rest, five, m)
				if m.Sign() != 0 {
					t.Fatalf("%v is not a finite decimal", c)
				}
				if b > k {
					k = b
				}
			}
			p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil)
			num := new(big.Int).Mul(a.Num(), new(big.Int).Quo(p, den))
			texts = append(texts, render(r, neg, num.String(), -k))
		}
		for _, n := range texts {
			N := rat(n)
			got := Above(n, max)
			if want := N.Cmp(S) > 0; got != want {
				t.Fatalf("limit %.40q (Max %v, S %s): Above(%.60q…) = %v, want %v", w, max, s, n, got, want)
			}
			f, ok := Float(n)
			if !got && (!ok || f > max) {
				t.Fatalf("limit %.40q (Max %v): %.60q… allowed, but its float64 is %v, %v", w, max, n, f, ok)
			}
			if ok && f < max && got {
				t.Fatalf("limit %.40q (Max %v): %.60q… refused, but its float64 %v is below Max", w, max, n, f)
			}
		}
		if Above(w, max) {
			if W.Cmp(S) <= 0 {
				t.Fatalf("limit %.40q refuses its own text", w)
			}
			refusedAsWritten++
		}
	}
	t.Logf("%d of the limits refuse their own text: more digits than the shortest decimal, and above it", refusedAsWritten)
}
