package corrid

import (
	"math/bits"
	"testing"
	"time"
)

// TestLate14FeistelOneToOneExhaustive: the permutation's code, run on
// narrow widths, maps every counter of the width to a distinct value of
// the same width, for several keys: the structure is one to one, so the 48
// bits of ids are too.
func TestLate14FeistelOneToOneExhaustive(t *testing.T) {
	for _, h := range []uint{1, 4, 8, 10} {
		for k := range 4 {
			var s Source
			s.Init()
			if k == 0 {
				s.keys = [rounds]uint64{} // a Source never given Init: still one to one
			}
			size := uint64(1) << (2 * h)
			seen := make([]uint64, (size+63)/64)
			moved := 0
			for n := range size {
				p := s.feistel(n, h)
				if p >= size {
					t.Fatalf("width %d: feistel(%d) = %d, beyond the width", 2*h, n, p)
				}
				if seen[p/64]&(1<<(p%64)) != 0 {
					t.Fatalf("width %d, keys %x: feistel(%d) = %d, given before", 2*h, s.keys, n, p)
				}
				seen[p/64] |= 1 << (p % 64)
				if p != n {
					moved++
				}
			}
			total := 0
			for _, w := range seen {
				total += bits.OnesCount64(w)
			}
			if uint64(total) != size {
				t.Fatalf("width %d: %d values reached, want %d", 2*h, total, size)
			}
			if h >= 8 && k > 0 && moved < int(size)/2 {
				t.Errorf("width %d: only %d of %d counters moved: the keys do not mix", 2*h, moved, size)
			}
		}
	}
	// The real width goes through the same code.
	var s Source
	s.Init()
	for _, n := range []uint64{0, 1, mask, 1 << half, 1<<(2*half) - 1} {
		if s.permute(n) != s.feistel(n, half) {
			t.Fatalf("permute(%d) is not feistel(%d, %d)", n, n, half)
		}
	}
}

// TestLate14IdsSortByMillisecond: every id made in a later millisecond
// sorts after every id of an earlier one, whatever their counters, across
// hex digit boundaries (within one millisecond they need not sort).
func TestLate14IdsSortByMillisecond(t *testing.T) {
	var s Source
	s.Init()
	base := time.UnixMilli(0x0193_a1b2_c3f0)
	const perMS = 4
	var ids []string
	for i := range 200 * perMS {
		var b [Len]byte
		s.PutAt(&b, base.Add(time.Duration(i/perMS)*time.Millisecond))
		ids = append(ids, string(b[:]))
	}
	for i := range ids {
		for j := range i {
			if j/perMS < i/perMS && ids[j] >= ids[i] {
				t.Fatalf("id %q of a later millisecond sorts before %q", ids[i], ids[j])
			}
		}
	}
}
