package mcpguard_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
)

// r57DownStore is a memory store that fails every Apply while down.
type r57DownStore struct {
	*limiter.MemoryStore
	down atomic.Bool
}

func (s *r57DownStore) Apply(ctx context.Context, now time.Time, b *limiter.Batch) error {
	if s.down.Load() {
		return errors.New("store down")
	}
	return s.MemoryStore.Apply(ctx, now, b)
}

// TestReview57NextRoundRefusalSaysWhy: a multi round-trip's later round
// refused (here by a limiter whose store went down) was recorded with the
// detail "next round of a multi round-trip call" alone, without the reason
// a first round's record has. It says both now. (Found by a helper.)
func TestReview57NextRoundRefusalSaysWhy(t *testing.T) {
	store := &r57DownStore{MemoryStore: limiter.NewMemoryStore()}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 4}}, &limiter.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	cs, _ := mrtrServer(t, mcpguard.Options{Audit: sink, Limiter: lim}, "", false)
	first, err := call(t, cs, "asknote", map[string]any{"target": "db-1"})
	if err != nil || !first.NeedsInput() {
		t.Fatalf("first round: %v %s", err, mustJSON(first))
	}
	store.down.Store(true)
	res := r51Retry(t, cs, first.RequestState)
	if code := errorCode(t, res); code != "RATE_LIMIT_EXCEEDED" {
		t.Fatalf("next round with the store down: %s; want RATE_LIMIT_EXCEEDED", mustJSON(res))
	}
	want := "next round of a multi round-trip call; the rate limiter is unavailable; try again shortly"
	if e := r51LastOutcome(t, sink); e.Detail != want {
		t.Errorf("next round's record: detail %q, want %q", e.Detail, want)
	}
}
