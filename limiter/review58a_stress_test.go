package limiter_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview58aStressSlots races decisions, refunds, sweeps and double
// releases on the memory store over many keys: the global cap is never
// passed, every slot comes back, and every key is idle (swept) at the end.
func TestReview58aStressSlots(t *testing.T) {
	ms := limiter.NewMemoryStore()
	const gmax = 5
	l, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: gmax},
		{Kind: limiter.Concurrency, Scope: limiter.Session, Max: 1},
		{Kind: limiter.Concurrency, Scope: limiter.User, Max: 2, Tool: "t1"},
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 1000, Window: time.Millisecond},
		{Kind: limiter.Spend, Scope: limiter.User, Max: 1000, Window: time.Millisecond},
	}, &limiter.Options{Store: ms})
	if err != nil {
		t.Fatal(err)
	}
	var inflight atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 20000 {
				r := limiter.Request{Session: "s" + strconv.Itoa(rng.IntN(3000)), User: "u" + strconv.Itoa(rng.IntN(50)), Tool: []string{"t1", "T1", "t2"}[rng.IntN(3)], Calls: 1, Cost: rng.Float64()}
				d := l.AllowAt(context.Background(), time.Now(), r)
				if d.Allowed {
					if n := inflight.Add(1); n > gmax {
						t.Errorf("inflight %d", n)
					}
					if rng.IntN(3) == 0 {
						l.Refund(context.Background(), time.Now(), d)
					}
					if rng.IntN(50) == 0 {
						ms.Sweep(time.Now())
					}
					inflight.Add(-1)
					l.Release(d)
					if rng.IntN(4) == 0 {
						l.Release(d)
					}
				}
			}
		}()
	}
	wg.Wait()
	var ds []limiter.Decision
	for i := range gmax {
		d := l.AllowAt(context.Background(), time.Now(), limiter.Request{Session: "x" + strconv.Itoa(i), Calls: 1})
		if !d.Allowed {
			t.Fatalf("slot %d after all released: %+v", i, d)
		}
		ds = append(ds, d)
	}
	if d := l.AllowAt(context.Background(), time.Now(), limiter.Request{Session: "y", Calls: 1}); d.Allowed {
		t.Fatal("over max")
	}
	for _, d := range ds {
		l.Release(d)
	}
	time.Sleep(5 * time.Millisecond)
	ms.Sweep(time.Now())
	if n := ms.Len(); n != 0 {
		t.Errorf("Len after sweep %d", n)
	}
}
