package limiter

import (
	"context"
	"hash/maphash"
	"testing"
	"time"
)

// TestReview28LeaseMapKeepsZero: a shard's lease map always holds 0, which
// names no lease, so that the release of its last lease does not empty it
// (a Go map draws a new hash seed, at some cost, whenever a delete empties
// it); across a shrink of the map too. Leases still count as before: the
// peak and the shrink leave 0 out, a second release frees nothing, and a
// slot is held while its lease is.
func TestReview28LeaseMapKeepsZero(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	s := NewMemoryStore()
	l, err := New([]Limit{{Kind: Concurrency, Scope: Global, Max: 1e6}}, &Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	sh := &s.shards[uint8(maphash.String(s.seed, ""))]
	const n = 2000
	ds := make([]Decision, n)
	for i := range ds {
		if ds[i] = l.AllowAt(ctx, now, Request{Calls: 1}); !ds[i].Allowed {
			t.Fatalf("call %d denied", i)
		}
	}
	if len(sh.leases) != n+1 || sh.leasePeak != n {
		t.Fatalf("after %d reservations: %d entries, peak %d; want %d entries (0 among them), peak %d",
			n, len(sh.leases), sh.leasePeak, n+1, n)
	}
	for i := range ds {
		l.Release(ds[i])
	}
	if _, ok := sh.leases[0]; !ok || len(sh.leases) != 1 || sh.leasePeak >= n {
		t.Fatalf("after every release: 0 held %v, %d entries, peak %d; want 0 alone, the map remade",
			ok, len(sh.leases), sh.leasePeak)
	}
	d := l.AllowAt(ctx, now, Request{Calls: 1})
	l.Release(ds[0]) // released already: frees nothing
	if st := sh.m[memKey{l.ids[0], ""}]; st == nil || st.inflight != 1 {
		t.Fatalf("a second release freed the slot a live lease holds: %+v", st)
	}
	l.Release(d)
	if st := sh.m[memKey{l.ids[0], ""}]; st.inflight != 0 || len(sh.leases) != 1 {
		t.Fatalf("after the last release: %d in flight, %d lease entries; want 0, 1", st.inflight, len(sh.leases))
	}
}
