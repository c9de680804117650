package limiter_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// oddLeases is a lease store whose reservations answer denied, a number
// outside the Batch contract, and that records the leases it is asked to
// abandon.
type oddLeases struct {
	denied    int
	mu        sync.Mutex
	reserved  []uint64
	abandoned []uint64
}

func (s *oddLeases) Apply(_ context.Context, _ time.Time, b *limiter.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case b.Release && b.Abandon:
		s.abandoned = append(s.abandoned, b.Lease)
	case !b.Release && !b.Refund:
		s.reserved = append(s.reserved, b.Lease)
		b.Denied = s.denied
	}
	return nil
}

func (s *oddLeases) LeasesSlots() bool { return true }

func (s *oddLeases) leases() (reserved, abandoned []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint64(nil), s.reserved...), append([]uint64(nil), s.abandoned...)
}

// TestReview15bOutOfContractAnswerAbandonsLease: a store answer outside
// the Batch contract (review 15) denies the call, and nothing is known of
// what the store did with the reservation: it may hold the call's
// in-flight slots under its lease, which nobody releases. As for an Apply
// that failed, the limiter now abandons the lease, so that the slots come
// back at once rather than when the lease expires (or never, for a store
// whose leases do not expire).
func TestReview15bOutOfContractAnswerAbandonsLease(t *testing.T) {
	for _, denied := range []int{-2, 5} {
		st := &oddLeases{denied: denied}
		l, err := limiter.New([]limiter.Limit{
			{Kind: limiter.Rate, Scope: limiter.User, Max: 10, Window: time.Minute},
			{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1},
		}, &limiter.Options{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		d := l.AllowAt(context.Background(), t0, limiter.Request{User: "u", Calls: 1})
		l.Release(d)
		if d.Allowed || !errors.Is(d.Err, limiter.ErrStoreUnavailable) {
			t.Fatalf("Denied=%d: allowed %v, err %v; want denied, unwrapping to ErrStoreUnavailable", denied, d.Allowed, d.Err)
		}
		var reserved, abandoned []uint64
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if reserved, abandoned = st.leases(); len(abandoned) > 0 {
				break
			}
		}
		if len(reserved) != 1 || len(abandoned) != 1 || abandoned[0] != reserved[0] {
			t.Errorf("Denied=%d: reserved leases %v, abandoned %v; want the reservation's lease abandoned once", denied, reserved, abandoned)
		}
	}
}
