package limiter_test

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview15StoreAnswerOutOfRange: a store that reports a denying check
// below -1 (the Redis script's -2 for an abandoned lease, say, or any other
// number the contract does not define) has not allowed the call. The
// limiter read every negative Denied as "allowed" and let the call through
// without any limit having taken it.
func TestReview15StoreAnswerOutOfRange(t *testing.T) {
	ctx := context.Background()
	for _, denied := range []int{-2, -5, math.MinInt} {
		st := limiter.StoreFunc(func(_ context.Context, _ time.Time, b *limiter.Batch) error {
			b.Denied = denied
			return nil
		})
		l, err := limiter.New([]limiter.Limit{
			{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Minute},
			{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1},
		}, &limiter.Options{Store: st, FailOpenReads: true, FailOpenWrites: true})
		if err != nil {
			t.Fatal(err)
		}
		d := l.AllowAt(ctx, t0, limiter.Request{User: "u", Calls: 1})
		if d.Allowed || !errors.Is(d.Err, limiter.ErrStoreUnavailable) {
			t.Errorf("store answered Denied=%d: AllowAt = allowed %v, err %v; want denied with an error that unwraps to ErrStoreUnavailable",
				denied, d.Allowed, d.Err)
		}
		l.Release(d)
	}
}

// TestReview15DoneContextNeverFailsOpen: fail-open is for a store that is
// down, not for a caller that gave up. A call whose context was cancelled
// (the client went away) or whose deadline passed while the store was
// deciding was allowed, uncharged, under FailOpenReads/FailOpenWrites: a
// client could pass the spend cap by disconnecting right after sending a
// write, which a Guard then runs to completion.
func TestReview15DoneContextNeverFailsOpen(t *testing.T) {
	// A store that honours its context, as the Store contract asks, and
	// otherwise allows.
	honest := limiter.StoreFunc(func(ctx context.Context, _ time.Time, b *limiter.Batch) error {
		if b.Release || b.Refund {
			return nil
		}
		if _, ok := ctx.Deadline(); ok {
			<-ctx.Done() // slow: the deadline passes while deciding
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		b.Denied = -1
		return nil
	})
	down := limiter.StoreFunc(func(context.Context, time.Time, *limiter.Batch) error {
		return errors.New("connection refused")
	})
	limits := []limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour}}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	deadline, cancel2 := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel2()

	tests := []struct {
		name  string
		store limiter.Store
		ctx   context.Context
		want  bool
		cause error
	}{
		{"cancelled_before", honest, cancelled, false, context.Canceled},
		{"deadline_while_deciding", honest, deadline, false, context.DeadlineExceeded},
		{"live_context_store_down", down, context.Background(), true, nil}, // fail-open as configured
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := limiter.New(limits, &limiter.Options{Store: tt.store, FailOpenReads: true, FailOpenWrites: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, write := range []bool{false, true} {
				d := l.AllowAt(tt.ctx, t0, limiter.Request{User: "u", Calls: 1, Cost: 5, Write: write})
				if d.Allowed != tt.want || !errors.Is(d.Err, limiter.ErrStoreUnavailable) {
					t.Errorf("write %v: AllowAt = allowed %v, err %v; want allowed %v and an error that unwraps to ErrStoreUnavailable",
						write, d.Allowed, d.Err, tt.want)
				}
				if tt.cause != nil && !errors.Is(d.Err, tt.cause) {
					t.Errorf("write %v: AllowAt err = %v, want one that unwraps to %v", write, d.Err, tt.cause)
				}
				l.Release(d)
			}
		})
	}
}

// TestReview15ConcurrencyKeysEvictedWhateverTheClock: an in-flight key whose
// calls have all ended is idle, whatever the time. The memory store kept
// concurrency entries with a theoretical arrival time of 0 (1970), so with
// a clock before 1970 (a test clock counting from the zero time.Time, say)
// no concurrency entry was ever evicted, and memory grew with every
// session.
func TestReview15ConcurrencyKeysEvictedWhateverTheClock(t *testing.T) {
	ctx := context.Background()
	for _, at := range []time.Time{time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), {}, t0} {
		s := limiter.NewMemoryStore()
		l, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.Session, Max: 1}}, &limiter.Options{Store: s})
		if err != nil {
			t.Fatal(err)
		}
		held := l.AllowAt(ctx, at, limiter.Request{Session: "busy", Calls: 1})
		for i := range 1000 {
			d := l.AllowAt(ctx, at, limiter.Request{Session: "s" + strconv.Itoa(i), Calls: 1})
			if !d.Allowed {
				t.Fatalf("at %v: session %d denied", at, i)
			}
			l.Release(d)
		}
		s.Sweep(at)
		if n := s.Len(); n != 1 {
			t.Errorf("at %v: Sweep after 1000 sessions' calls ended left %d entries, want 1 (the call still in flight)", at, n)
		}
		if d := l.AllowAt(ctx, at, limiter.Request{Session: "busy", Calls: 1}); d.Allowed {
			t.Errorf("at %v: the session with a call in flight got a second slot after Sweep", at)
		}
		l.Release(held)
		if d := l.AllowAt(ctx, at, limiter.Request{Session: "busy", Calls: 1}); !d.Allowed {
			t.Errorf("at %v: after its call ended, the session was denied", at)
		}
	}
}

// countingLeases is a lease store that counts the batches it is sent.
type countingLeases struct {
	mu sync.Mutex
	n  int
}

func (s *countingLeases) Apply(ctx context.Context, _ time.Time, b *limiter.Batch) error {
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	b.Denied = -1
	return nil
}

func (s *countingLeases) LeasesSlots() bool { return true }

func (s *countingLeases) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// TestReview15DoneContextAsksNothing: a call whose context is already done
// is denied without a round trip to the store. It used to be sent (and
// refused by the store), then its lease abandoned in the background: two
// round trips for every call of a client that disconnects, and abandons
// (at most 64 at once) crowded out by them.
func TestReview15DoneContextAsksNothing(t *testing.T) {
	st := &countingLeases{}
	l, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}}, &limiter.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d := l.AllowAt(ctx, t0, limiter.Request{User: "u", Calls: 1})
	l.Release(d)
	if d.Allowed || !errors.Is(d.Err, context.Canceled) {
		t.Errorf("cancelled context: allowed %v, err %v; want denied, unwrapping to context.Canceled", d.Allowed, d.Err)
	}
	time.Sleep(100 * time.Millisecond) // an abandon would be sent by now
	if n := st.count(); n != 0 {
		t.Errorf("a call whose context was done sent %d batches to the store, want 0", n)
	}
}
