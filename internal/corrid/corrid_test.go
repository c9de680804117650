package corrid

import (
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

func TestNext(t *testing.T) {
	var s Source
	s.Init()
	shape := regexp.MustCompile(`^[0-9a-f]{12}-[0-9a-f]{12}$`)
	before := time.Now().UnixMilli()
	for range 1000 {
		id := s.Next()
		if !shape.MatchString(id) {
			t.Fatalf("Next() = %q, want 12 hex digits, '-', 12 hex digits", id)
		}
		ms, _ := strconv.ParseUint(id[:12], 16, 64)
		if now := time.Now().UnixMilli(); int64(ms) < before || int64(ms) > now {
			t.Fatalf("Next() = %q: its time %d is not between %d and %d", id, ms, before, now)
		}
	}
	var b [Len]byte
	at := time.UnixMilli(0x0193a1b2c3d4)
	s.PutAt(&b, at)
	if got := string(b[:13]); got != "0193a1b2c3d4-" {
		t.Errorf("PutAt(%v) = %q, want the time's milliseconds first", at, b)
	}
}

// TestIdsDoNotCount: of consecutive ids, the counter parts are not
// consecutive: a caller given two cannot count the calls between.
func TestIdsDoNotCount(t *testing.T) {
	var s Source
	s.Init()
	prev := uint64(0)
	near := 0
	for i := range 10000 {
		id := s.Next()
		n, _ := strconv.ParseUint(id[13:], 16, 64)
		if i > 0 && (n-prev < 1000 || prev-n < 1000) { // either way, within 1000
			near++
		}
		prev = n
	}
	if near > 5 {
		t.Errorf("%d of 10000 consecutive ids are within 1000 of the one before: they count", near)
	}
}

// TestPermutationOneToOne: over a range of counters, and across a wrap of
// either half, no two counters give the same id part.
func TestPermutationOneToOne(t *testing.T) {
	var s Source
	s.Init()
	seen := map[uint64]bool{}
	for _, start := range []uint64{0, mask - 500, 1<<(2*half) - 500} {
		for n := start; n < start+1000 && n < 1<<(2*half); n++ {
			p := s.permute(n)
			if p >= 1<<(2*half) {
				t.Fatalf("permute(%d) = %d: beyond 48 bits", n, p)
			}
			if seen[p] {
				t.Fatalf("permute(%d) = %d, given before", n, p)
			}
			seen[p] = true
		}
	}
}

// TestNextPast48Bits: the counter wraps at 2^48 and the ids stay well
// formed.
func TestNextPast48Bits(t *testing.T) {
	var s Source
	s.Init()
	s.seq.Store(1<<48 - 2)
	a, b, c := s.Next(), s.Next(), s.Next()
	if a[13:] == b[13:] || b[13:] == c[13:] {
		t.Errorf("ids across the wrap: %q %q %q", a, b, c)
	}
}

func TestNextConcurrentUnique(t *testing.T) {
	var s Source
	s.Init()
	const goroutines, each = 8, 2000
	ids := make([][]string, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				ids[g] = append(ids[g], s.Next())
			}
		}()
	}
	wg.Wait()
	seen := make(map[string]bool, goroutines*each)
	for _, l := range ids {
		for _, id := range l {
			if seen[id[13:]] {
				t.Fatalf("id %q made twice", id)
			}
			seen[id[13:]] = true
		}
	}
}

func TestSourcesDiffer(t *testing.T) {
	// Two sources draw their permutations independently: the first ids
	// of ten sources all equal would mean they are not random.
	var a Source
	a.Init()
	first := a.Next()[13:]
	for range 10 {
		var b Source
		b.Init()
		if b.Next()[13:] != first {
			return
		}
	}
	t.Fatal("ten sources gave the same first id")
}

func BenchmarkPutAt(b *testing.B) {
	var s Source
	s.Init()
	var id [Len]byte
	for b.Loop() {
		s.PutAt(&id, time.Now())
	}
}
