package audit

import (
	"encoding/json"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReview17PlainNumberProperty checks plainNumber against exact
// arithmetic on random JSON numbers: a float64 exactly when the shortest
// decimal of the nearest float64 has the number's value, else the
// json.Number as written.
func TestReview17PlainNumberProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 3))
	digits := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		return b.String()
	}
	for range 20000 {
		var b strings.Builder
		if r.IntN(2) == 0 {
			b.WriteByte('-')
		}
		if r.IntN(4) == 0 {
			b.WriteByte('0')
		} else {
			b.WriteByte(byte('1' + r.IntN(9)))
			b.WriteString(digits(r.IntN(24)))
		}
		if r.IntN(2) == 0 {
			b.WriteByte('.')
			b.WriteString(digits(1 + r.IntN(20)))
		}
		if r.IntN(2) == 0 {
			b.WriteString([]string{"e", "E", "e+", "e-", "E-"}[r.IntN(5)])
			b.WriteString(strconv.Itoa(r.IntN(420)))
		}
		n := b.String()
		var want any = json.Number(n)
		if f, err := strconv.ParseFloat(n, 64); err == nil {
			x, _ := new(big.Rat).SetString(n)
			y, _ := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
			if x.Cmp(y) == 0 {
				want = f
			}
		}
		if got := plainNumber(json.Number(n)); !cmp.Equal(want, got) {
			t.Errorf("plainNumber(%s) = %#v, want %#v", n, got, want)
		}
	}
}
