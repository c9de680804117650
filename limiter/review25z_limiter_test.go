package limiter_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview25zApplyDuringSweep: Apply asks whether its store was made by
// NewMemoryStore while another goroutine's sweep replaces a shard's map
// (under that shard's lock). The question must not read what a sweep
// writes: under -race, reading the first shard's map without its lock was
// a data race between any Apply and a sweep of that shard.
func TestReview25zApplyDuringSweep(t *testing.T) {
	s := limiter.NewMemoryStore()
	ctx := context.Background()
	t0 := time.Now()
	check := func(key string) *limiter.Batch {
		return &limiter.Batch{Checks: []limiter.Check{{ID: "r", Key: key, Kind: limiter.Rate, Max: 5, Window: time.Second, N: 1}}}
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := s.Apply(ctx, t0, check("b")); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for round := range 50 {
		for i := range 256 {
			if err := s.Apply(ctx, t0, check(strconv.Itoa(round*256+i))); err != nil {
				t.Fatal(err)
			}
		}
		s.Sweep(t0.Add(time.Hour)) // every key idle: each shard gets a new map
	}
	close(stop)
	wg.Wait()
}
