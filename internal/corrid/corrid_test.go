package corrid

import (
	"regexp"
	"sync"
	"testing"
)

func TestNext(t *testing.T) {
	var s Source
	s.Init()
	shape := regexp.MustCompile(`^[0-9a-f]{12}-[0-9a-f]{12}$`)
	prev := ""
	for range 1000 {
		id := s.Next()
		if !shape.MatchString(id) {
			t.Fatalf("Next() = %q, want 12 hex digits, '-', 12 hex digits", id)
		}
		if id[:12] != s.Next()[:12] {
			t.Fatalf("prefix changed within one source")
		}
		if id <= prev {
			t.Fatalf("Next() = %q after %q: ids must increase", id, prev)
		}
		prev = id
	}
}

// TestNextPast32Bits: the counter does not wrap at 2^32 (4 billion ids, a
// few days of a busy gateway).
func TestNextPast32Bits(t *testing.T) {
	var s Source
	s.Init()
	s.seq.Store(1<<32 - 2)
	a, b := s.Next(), s.Next() // 2^32-1, 2^32
	if a >= b {
		t.Errorf("Next() = %q then %q: want increasing ids across 2^32", a, b)
	}
	if want := "-000100000000"; b[len(b)-len(want):] != want {
		t.Errorf("Next() = %q, want it to end in %q", b, want)
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
			if seen[id] {
				t.Fatalf("id %q made twice", id)
			}
			seen[id] = true
		}
	}
}

func TestPrefixesDiffer(t *testing.T) {
	// Two sources draw their prefixes independently: 48 random bits, so
	// ten draws all equal would mean the prefix is not random.
	var a Source
	a.Init()
	for range 10 {
		var b Source
		b.Init()
		if a.Next()[:12] != b.Next()[:12] {
			return
		}
	}
	t.Fatal("ten sources drew the same prefix")
}
