package confirm_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/confirm"
)

// heapAfterGC returns the bytes of live heap after a collection.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestMemoryNonceStoreGivesMemoryBack: a burst of confirmations (many
// nonces used within one TTL) must not hold the store's memory once they
// have expired. The store forgets each nonce at its expiry, but a Go map
// keeps the room it grew to after its entries are deleted, so a process
// that once saw a burst kept that memory for good.
func TestMemoryNonceStoreGivesMemoryBack(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a store with 200,000 nonces")
	}
	ctx := context.Background()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	const burst = 200_000
	names := make([]string, burst)
	for i := range names {
		names[i] = strconv.Itoa(1_000_000_000 + i) // stands for a hex nonce
	}
	before := heapAfterGC()
	m := confirm.NewMemoryNonceStore()
	for i, n := range names {
		if first, err := m.Consume(ctx, n, t0, t0.Add(time.Minute+time.Duration(i))); err != nil || !first {
			t.Fatalf("Consume(%s) = %v, %v", n, first, err)
		}
	}
	full := heapAfterGC()
	// Later, the usual trickle: every burst nonce has expired.
	later := t0.Add(10 * time.Minute)
	for i := range 64 {
		now := later.Add(time.Duration(i) * 100 * time.Millisecond)
		if first, err := m.Consume(ctx, "trickle-"+strconv.Itoa(i), now, now.Add(time.Minute)); err != nil || !first {
			t.Fatalf("Consume(trickle-%d) = %v, %v", i, first, err)
		}
	}
	if n := m.Len(); n != 64 {
		t.Fatalf("Len = %d after the burst expired, want 64", n)
	}
	after := heapAfterGC()
	runtime.KeepAlive(m)
	runtime.KeepAlive(names)
	held, grown := int64(after)-int64(before), int64(full)-int64(before)
	t.Logf("heap: %d bytes with %d nonces, %d bytes held with 64 left", grown, burst, held)
	if held > 1<<20 {
		t.Errorf("the store holds %d bytes for 64 nonces after a burst of %d expired (%d at its peak); want under 1 MiB",
			held, burst, grown)
	}
}

// TestIssueRecordsNothing: states that are issued and never answered cost
// the nonce store nothing, however many there are; only a used state is
// remembered, until its expiry.
func TestIssueRecordsNothing(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	m := confirm.NewMemoryNonceStore()
	s, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, &confirm.Options{Nonces: m})
	if err != nil {
		t.Fatal(err)
	}
	c := confirm.Claims{Subject: "alice", Tool: "refund", ArgsSHA256: "ab12"}
	var last string
	for range 20_000 {
		if last, err = s.Issue(t0, c); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Check(t0, last, c); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.Len(); n != 0 {
		t.Errorf("Len = %d after 20000 states were issued and checked, want 0", n)
	}
	if err := s.Verify(ctx, t0, last, c); err != nil {
		t.Fatal(err)
	}
	if n := m.Len(); n != 1 {
		t.Errorf("Len = %d after one state was used, want 1", n)
	}
}
