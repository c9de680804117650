package limiter_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// r63iPassStore is a Store of the user's that hands every batch to a
// MemoryStore (a wrapper that counts, say): the Limiter reads its answers
// through the Batch contract, not the MemoryStore's fast path.
type r63iPassStore struct{ m *limiter.MemoryStore }

func (s r63iPassStore) Apply(ctx context.Context, now time.Time, b *limiter.Batch) error {
	return s.m.Apply(ctx, now, b)
}

func (s r63iPassStore) Peeks() bool       { return true }
func (s r63iPassStore) LeasesSlots() bool { return true }

// TestReview63iMemoryAnswersKeepContract: 63b's check of a denial's wait
// against N and Max refuses no answer the MemoryStore gives: over random
// limits (float Max, windows of a nanosecond up, Concurrency mixed with
// Rate and Spend, costs above a Spend's Max, dry runs' Peek checks) and
// clocks, no decision fails.
func TestReview63iMemoryAnswersKeepContract(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 1))
	windows := []time.Duration{time.Nanosecond, 2, 3, time.Microsecond, time.Millisecond, time.Second, time.Hour}
	maxes := []float64{0.5, 1, 1.5, 2, 3, 0.1, 7.25}
	denied := 0
	for range 300 {
		var lims []limiter.Limit
		for range 1 + rng.IntN(3) {
			k := []limiter.Kind{limiter.Rate, limiter.Spend, limiter.Concurrency}[rng.IntN(3)]
			l := limiter.Limit{Kind: k, Scope: limiter.User, Max: maxes[rng.IntN(len(maxes))]}
			if k != limiter.Concurrency {
				l.Window = windows[rng.IntN(len(windows))]
			}
			lims = append(lims, l)
		}
		l, err := limiter.New(lims, &limiter.Options{Store: r63iPassStore{limiter.NewMemoryStore()}})
		if err != nil {
			continue
		}
		now := time.Unix(1e9, 0)
		var held []limiter.Decision
		for range 30 {
			now = now.Add(time.Duration(rng.IntN(3)))
			r := limiter.Request{User: "u", Calls: 1, Cost: maxes[rng.IntN(len(maxes))] * float64(rng.IntN(3)), DryRun: rng.IntN(4) == 0}
			d := l.AllowAt(context.Background(), now, r)
			if d.Err != nil {
				t.Fatalf("limits %v, request %+v: %v", lims, r, d.Err)
			}
			if d.Allowed {
				held = append(held, d)
			} else {
				denied++
			}
			if len(held) > 0 && rng.IntN(2) == 0 {
				l.Release(held[0])
				held = held[1:]
			}
		}
		for _, d := range held {
			l.Release(d)
		}
	}
	if denied < 100 {
		t.Fatalf("only %d denials", denied)
	}
}
