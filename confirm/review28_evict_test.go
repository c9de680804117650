package confirm_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/confirm"
)

// TestReview28FloodKeepsUsedNonce: a nonce used at second 119 of its 120
// is never first again while other callers flood the memory store with
// nonces of every expiry, their clocks running up to a minute ahead, so
// that it evicts (and forgets) many times over: not to a replay whose
// clock lags, before the nonce's eviction or after it. The store then
// holds only the nonces not yet expired.
func TestReview28FloodKeepsUsedNonce(t *testing.T) {
	ctx := context.Background()
	base := time.Unix(1_700_000_000, 0)
	m := confirm.NewMemoryNonceStore()
	exp := base.Add(120 * time.Second)
	if first, err := m.Consume(ctx, "victim", base.Add(119*time.Second), exp); err != nil || !first {
		t.Fatalf("first Consume = %v, %v; want true, nil", first, err)
	}
	const n = 100_000
	for i := range n {
		// Clocks from 100s to 190s, expiries up to 120s past each.
		now := base.Add(100*time.Second + time.Duration(i)*90*time.Second/n)
		if _, err := m.Consume(ctx, "flood-"+strconv.Itoa(i), now, now.Add(time.Duration(i%120+1)*time.Second)); err != nil {
			t.Fatal(err)
		}
		if i%1000 != 0 {
			continue
		}
		// The replay, by callers whose clocks lag: the state is valid by
		// them. One lags by more than the store's grace (a clock stepped
		// back), so that the store acts at its own time, before the
		// nonce's expiry, although it has forgotten the nonce.
		for _, lag := range []time.Duration{time.Millisecond, 61 * time.Second} {
			at := exp.Add(-lag)
			if first, err := m.Consume(ctx, "victim", at, exp); err != nil || first {
				t.Fatalf("replay at flood call %d (clocks %v, %v) = %v, %v; want false, nil", i, now.Sub(base), at.Sub(base), first, err)
			}
			if used, err := m.Used(ctx, "victim", at, exp); err != nil || !used {
				t.Fatalf("Used at flood call %d (clocks %v, %v) = %v, %v; want true, nil", i, now.Sub(base), at.Sub(base), used, err)
			}
		}
	}
	end := base.Add(190 * time.Second)
	if first, err := m.Consume(ctx, "last", end, end.Add(time.Second)); err != nil || !first {
		t.Fatalf("Consume(last) = %v, %v; want true, nil", first, err)
	}
	// The flood's nonces expiring after 190s: for an expiry k seconds
	// past its clock, those of the last k/90 of the clocks; 63% in all.
	if got := m.Len(); got > n*2/3 {
		t.Errorf("%d nonces held at 190s, want only those not expired (about %d)", got, n*63/100)
	}
}
