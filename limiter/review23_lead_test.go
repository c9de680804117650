package limiter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// passedDeadline is a context at the instant its deadline has passed but
// its timer has not yet marked it done: Err is still nil.
type passedDeadline struct{ context.Context }

func (passedDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// TestReview23PassedDeadlineNeverFailsOpen: a store whose client times out
// at the caller's deadline (go-redis with ContextTimeoutEnabled) can fail
// a hair before the context's timer marks it done; the call was then taken
// for one a down store failed, and let through fail-open, uncharged: the
// hole TestReview15DoneContextNeverFailsOpen closed for a context marked
// done. Its deadline has passed: it is denied.
func TestReview23PassedDeadlineNeverFailsOpen(t *testing.T) {
	store := limiter.StoreFunc(func(context.Context, time.Time, *limiter.Batch) error {
		return errors.New("i/o timeout")
	})
	l, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour}},
		&limiter.Options{Store: store, FailOpenReads: true, FailOpenWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, write := range []bool{false, true} {
		d := l.AllowAt(passedDeadline{context.Background()}, time.Now(), limiter.Request{User: "u", Calls: 1, Cost: 10, Write: write})
		l.Release(d)
		if d.Allowed || !errors.Is(d.Err, context.DeadlineExceeded) || !errors.Is(d.Err, limiter.ErrStoreUnavailable) {
			t.Errorf("write=%v: allowed=%v err=%v; want denied, unwrapping to ErrStoreUnavailable and context.DeadlineExceeded", write, d.Allowed, d.Err)
		}
	}
	// A live context still fails open, as configured.
	d := l.AllowAt(context.Background(), time.Now(), limiter.Request{User: "u", Calls: 1, Cost: 10})
	l.Release(d)
	if !d.Allowed {
		t.Errorf("live context: allowed=%v err=%v; want allowed (fail open)", d.Allowed, d.Err)
	}
}
