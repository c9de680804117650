package limiter_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview57AbandonWithoutLeaseValidated: MemoryStore.Apply fails, its
// documentation says, for a batch holding a check outside the Check
// contract, and changes nothing. An Abandon without a Lease (which frees
// nothing on the memory store) was answered nil before its checks were
// looked at, however invalid: a NaN Max, an invalid Kind, a negative N,
// as the Redis store refuses them.
func TestReview57AbandonWithoutLeaseValidated(t *testing.T) {
	s := limiter.NewMemoryStore()
	for _, c := range []limiter.Check{
		{ID: "c", Kind: limiter.Concurrency, Max: math.NaN(), N: 1},
		{ID: "c", Kind: 0, Max: 1, N: 1},
		{ID: "c", Kind: limiter.Concurrency, Max: 1, N: -1},
		{ID: "r", Kind: limiter.Rate, Max: 1, N: 1, Window: -time.Second},
	} {
		b := &limiter.Batch{Release: true, Abandon: true, Checks: []limiter.Check{c}}
		if err := s.Apply(context.Background(), time.Unix(1_700_000_000, 0), b); err == nil {
			t.Errorf("abandon without a lease of %+v: no error; want the invalid check refused", c)
		}
	}
	// A valid one still frees nothing and succeeds.
	b := &limiter.Batch{Release: true, Abandon: true, Checks: []limiter.Check{{ID: "c", Kind: limiter.Concurrency, Max: 1, N: 1}}}
	if err := s.Apply(context.Background(), time.Unix(1_700_000_000, 0), b); err != nil {
		t.Errorf("valid abandon without a lease: %v", err)
	}
}
