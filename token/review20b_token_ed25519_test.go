package token_test

import (
	"crypto/ed25519"
	"encoding/hex"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/token"
)

// edPoint is a point of Ed25519 in affine coordinates, for deriving the
// points of small order from the curve's equation, -x² + y² = 1 + dx²y²
// over the integers modulo p = 2^255-19.
type edPoint struct{ x, y *big.Int }

var (
	edP = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))
	edL = func() *big.Int { // the order of the prime-order group
		l, _ := new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)
		return l
	}()
	edD = edMod(new(big.Int).Mul(big.NewInt(-121665), new(big.Int).ModInverse(big.NewInt(121666), edP)))
)

func edMod(v *big.Int) *big.Int { return v.Mod(v, edP) }

func edDiv(a, b *big.Int) *big.Int {
	return edMod(new(big.Int).Mul(a, new(big.Int).ModInverse(edMod(b), edP)))
}

func edAdd(a, b edPoint) edPoint {
	x1x2, y1y2 := new(big.Int).Mul(a.x, b.x), new(big.Int).Mul(a.y, b.y)
	dxy := edMod(new(big.Int).Mul(edD, new(big.Int).Mul(x1x2, y1y2)))
	x := edDiv(new(big.Int).Add(new(big.Int).Mul(a.x, b.y), new(big.Int).Mul(a.y, b.x)), new(big.Int).Add(big.NewInt(1), dxy))
	y := edDiv(new(big.Int).Add(y1y2, x1x2), new(big.Int).Sub(big.NewInt(1), dxy))
	return edPoint{x, y}
}

func edMul(k *big.Int, a edPoint) edPoint {
	r := edPoint{big.NewInt(0), big.NewInt(1)}
	for i := k.BitLen() - 1; i >= 0; i-- {
		r = edAdd(r, r)
		if k.Bit(i) == 1 {
			r = edAdd(r, a)
		}
	}
	return r
}

func edIsNeutral(a edPoint) bool { return a.x.Sign() == 0 && a.y.Cmp(big.NewInt(1)) == 0 }

// edEncode is RFC 8032's encoding of y (which may be at or over p) with
// the sign bit sign.
func edEncode(y *big.Int, sign uint) string {
	b := y.FillBytes(make([]byte, 32))
	slices.Reverse(b)
	b[31] |= byte(sign << 7)
	return hex.EncodeToString(b)
}

// smallOrderEncodings derives from the curve every 32-byte string that
// crypto/ed25519 decodes as a point of small order: the eight points are
// the multiples of [l]P of order 8 (P on the curve); each is encoded with
// its y and, where under 2^255, y+p, and with both sign bits where x = 0.
func smallOrderEncodings(t *testing.T) []string {
	t.Helper()
	var gen edPoint
	for y := int64(2); gen.x == nil; y++ {
		yy := big.NewInt(y)
		y2 := new(big.Int).Mul(yy, yy)
		x := new(big.Int).ModSqrt(edDiv(new(big.Int).Sub(y2, big.NewInt(1)), new(big.Int).Add(new(big.Int).Mul(edD, y2), big.NewInt(1))), edP)
		if x == nil {
			continue
		}
		q := edMul(edL, edPoint{x, yy})
		if !edIsNeutral(edMul(big.NewInt(4), q)) {
			gen = q // of order 8: [8]q = [8l]P is neutral, [4]q is not
		}
	}
	limit := new(big.Int).Lsh(big.NewInt(1), 255)
	var encs []string
	q := edPoint{big.NewInt(0), big.NewInt(1)}
	for range 8 {
		signs := []uint{q.x.Bit(0)}
		if q.x.Sign() == 0 {
			signs = []uint{0, 1}
		}
		for _, y := range []*big.Int{q.y, new(big.Int).Add(q.y, edP)} {
			for _, s := range signs {
				if y.Cmp(limit) < 0 {
					encs = append(encs, edEncode(y, s))
				}
			}
		}
		q = edAdd(q, gen)
	}
	if !edIsNeutral(q) {
		t.Fatalf("[8]T8 is not the neutral point: the curve arithmetic is wrong")
	}
	slices.Sort(encs)
	return slices.Compact(encs)
}

// TestReview20bEd25519EverySmallOrderEncodingRefused: the points of small
// order are derived here from the curve's equation, not copied from a
// list, and every encoding crypto/ed25519 accepts for one (14: y and y+p
// where under 2^255, both sign bits on x = 0) is refused, and verifies a
// signature made without a private key. The list of the first review
// lacked one, ecff..ff (y = -1, x = -0); smallOrder, which reads y alone,
// refused it already.
func TestReview20bEd25519EverySmallOrderEncodingRefused(t *testing.T) {
	encs := smallOrderEncodings(t)
	if len(encs) != 14 {
		t.Fatalf("derived %d encodings of small-order points, want 14: %q", len(encs), encs)
	}
	for _, h := range smallOrderEd25519 {
		if !slices.Contains(encs, h) {
			t.Errorf("%s is listed as of small order, not derived as one", h)
		}
	}
	for _, h := range encs {
		raw, _ := hex.DecodeString(h)
		forgeEdDSA(t, ed25519.PublicKey(raw), "weak") // fails the test unless a forgery verifies
		if _, err := token.ParseJWKS(jwks(t, jwk(t, "weak", ed25519.PublicKey(raw)))); err == nil || !strings.Contains(err.Error(), "small order") {
			t.Errorf("ParseJWKS of %s: err %v, want the key refused for its small order", h, err)
		}
	}
}
