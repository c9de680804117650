package limiter

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"
)

// refIncrement is increment for 0 < n <= m, exactly, with math/big:
// floor(window*n/m), at least 1.
func refIncrement(window int64, n, m float64) int64 {
	q := new(big.Rat).SetInt64(window)
	q.Mul(q, new(big.Rat).SetFloat64(n))
	q.Quo(q, new(big.Rat).SetFloat64(m))
	z := new(big.Int).Quo(q.Num(), q.Denom())
	if z.Sign() == 0 {
		return 1
	}
	return z.Int64()
}

// TestReview27bIncrementExact: for a cost up to Max, the memory store's
// emission interval is window*n/max rounded down exactly (at least 1 ns),
// on every window from 1 ns to the longest a Batch may carry, for tiny,
// subnormal, huge costs and limits, n == max, n just below max, and
// exponent differences around 63, 64, 127 and 128 bits (the shifts of
// exactIncrement), whichever of its float estimate or division decides.
func TestReview27bIncrementExact(t *testing.T) {
	windows := []int64{1, 2, 3, 999, int64(MinWindow), int64(time.Second), 1 << 52, 1<<52 + 1, 1<<53 - 1,
		int64(90 * 24 * time.Hour), int64(MaxWindow), int64(MaxWindow) - 77, math.MaxInt64 / 4, math.MaxInt64 - 1, math.MaxInt64}
	maxes := []float64{math.SmallestNonzeroFloat64, 3 * math.SmallestNonzeroFloat64, 0x1p-1022, math.Nextafter(0x1p-1022, 0),
		1e-300, 0.1, 1, 3, 7, 11, 2755.2, 5685.9, 1e15, 1 << 53, 1e300, math.MaxFloat64}
	check := func(w int64, n, m float64) {
		t.Helper()
		if !(n > 0 && n <= m) {
			return
		}
		got, want := increment(w, n, m), refIncrement(w, n, m)
		if got != want {
			t.Errorf("increment(%d, %v, %v) = %d, want %d", w, n, m, got, want)
		}
	}
	for _, w := range windows {
		for _, m := range maxes {
			ns := []float64{m, math.Nextafter(m, 0), m / 2, m / 3, m / 7, m / 10, m * 0x1p-52, m * 0x1p-53,
				math.SmallestNonzeroFloat64, 1, 0.5, 1e-9}
			for _, d := range []int{1, 52, 53, 62, 63, 64, 65, 116, 117, 126, 127, 128, 129, 200} {
				ns = append(ns, math.Ldexp(m, -d), math.Nextafter(math.Ldexp(m, -d), 0), math.Nextafter(math.Ldexp(m, -d), math.Inf(1)))
			}
			for _, n := range ns {
				check(w, n, m)
			}
		}
	}
	r := rand.New(rand.NewPCG(27, 2))
	for range 200_000 {
		w := r.Int64N(math.MaxInt64) + 1
		switch r.IntN(3) {
		case 0:
			w = r.Int64N(int64(MaxWindow)) + 1
		case 1:
			w = r.Int64N(1<<20) + 1
		}
		m := math.Float64frombits(r.Uint64N(0x7ff0000000000000-1) + 1)
		var n float64
		switch r.IntN(3) {
		case 0:
			n = math.Float64frombits(r.Uint64N(math.Float64bits(m)) + 1) // any float up to m
		case 1:
			n = math.Ldexp(m*(0.5+r.Float64()/2), -r.IntN(140)) // exponent difference up to 140
		default:
			n = m * r.Float64() // near the division path
		}
		check(w, n, m)
	}
}

// TestReview27bHugeBatchWindowNotUnlimited: a Check's Window may be any
// positive duration (see Check), and the MemoryStore's exact increment of a
// call of Max is the whole window. Its theoretical arrival time, now plus
// that, must not wrap around int64 into a bucket that reads as full: every
// call of Max was allowed, for ever, on a window of 250 years. The store now
// refuses a window longer than MaxWindow (an error: nothing allowed), as
// Limit does; on MaxWindow itself a burst of Max fits and no more.
func TestReview27bHugeBatchWindowNotUnlimited(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, w := range []time.Duration{MaxWindow, MaxWindow + 1, 250 * 365 * 24 * time.Hour, math.MaxInt64 / 2, math.MaxInt64} {
		for _, c := range []struct{ max, n float64 }{{1, 1}, {3, 1}, {1e6, 1e6}, {1e18, 1}} {
			s := NewMemoryStore()
			allowed := 0
			for i := range 8 {
				b := &Batch{Checks: []Check{{ID: "spend", Key: "k", Kind: Spend, Max: c.max, Window: w, N: c.n}}}
				err := s.Apply(t.Context(), now.Add(time.Duration(i)), b)
				if err == nil && b.Denied < 0 {
					allowed++
				}
			}
			// At most Max units pass at once (and the refill in 7 ns is
			// nothing here).
			lim := int(min(c.max/c.n, 8))
			if allowed > lim || w == MaxWindow && allowed != lim {
				t.Errorf("window %v, max %v, n %v: %d of 8 calls in 8 ns allowed, want at most %d", w, c.max, c.n, allowed, lim)
			}
		}
	}
}

// TestReview27bRefundGivesBackExactly: a refund right after a reservation
// moves the bucket back by exactly the increment the reservation added
// (both exact now), on long windows and odd costs: the wait a probe of Max
// reads is the one of a bucket that never saw the refunded call.
func TestReview27bRefundGivesBackExactly(t *testing.T) {
	ctx := t.Context()
	t0 := time.Unix(1_800_000_000, 0)
	r := rand.New(rand.NewPCG(27, 3))
	for i := range 300 {
		w := time.Duration(r.Int64N(int64(MaxWindow-MinWindow))) + MinWindow
		if i%3 == 0 {
			w = MaxWindow - time.Duration(r.IntN(1000))
		}
		m := math.Round(r.Float64()*1e7) / 100
		if m == 0 {
			continue
		}
		c1, c2 := m*r.Float64()/2, m*r.Float64()/2
		lim := []Limit{{Kind: Spend, Scope: Session, Max: m, Window: w}}
		a, _ := New(lim, nil)
		b, _ := New(lim, nil)
		if d := a.AllowAt(ctx, t0, Request{Session: "s", Cost: c1}); !d.Allowed {
			t.Fatalf("a: %v", d)
		}
		if d := b.AllowAt(ctx, t0, Request{Session: "s", Cost: c1}); !d.Allowed {
			t.Fatalf("b: %v", d)
		}
		d := b.AllowAt(ctx, t0, Request{Session: "s", Cost: c2})
		if !d.Allowed {
			t.Fatalf("b2: %v", d)
		}
		if err := b.Refund(ctx, t0, d); err != nil {
			t.Fatal(err)
		}
		pa := a.AllowAt(ctx, t0, Request{Session: "s", Cost: m})
		pb := b.AllowAt(ctx, t0, Request{Session: "s", Cost: m})
		if pa.Allowed || pb.Allowed || pa.RetryAfter != pb.RetryAfter {
			t.Errorf("window %v, max %v, costs %v then %v refunded: a probe of Max waits %v, want %v as without the refunded call",
				w, m, c1, c2, pb.RetryAfter, pa.RetryAfter)
		}
	}
}
