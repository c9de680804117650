package limiter_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testlog"
	"github.com/mcpguard/mcpguard/limiter"
)

// panickyAbandons is a lease store whose reservations fail and whose
// abandons panic; it counts both.
type panickyAbandons struct {
	mu                 sync.Mutex
	reserves, abandons int
}

var errDown = errors.New("store down")

func (s *panickyAbandons) Apply(_ context.Context, _ time.Time, b *limiter.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b.Release && b.Abandon {
		s.abandons++
		panic("the store's bug")
	}
	s.reserves++
	return errDown
}

func (s *panickyAbandons) LeasesSlots() bool { return true }

func (s *panickyAbandons) counts() (reserves, abandons int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reserves, s.abandons
}

// TestReview54AbandonPanicContained: the limiter abandons a failed
// reservation's lease on a goroutine of its own, where a panic of the
// store's would end the process (on a caller's goroutine it is the
// batch's failure since 61d: TestReview61dLimiterReservePanic). The panic
// is logged, the abandon is
// not tried again (the lease expires), and the limiter goes on deciding
// and abandoning.
func TestReview54AbandonPanicContained(t *testing.T) {
	logged := testlog.CaptureDefault(t)

	st := &panickyAbandons{}
	l, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}}, &limiter.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	// More reservations than the abandons the limiter runs at once: each
	// abandon that panicked must have given its place back.
	const calls = 200
	for i := range calls {
		d := l.AllowAt(context.Background(), t0, limiter.Request{User: "u", Calls: 1})
		if d.Allowed || !errors.Is(d.Err, limiter.ErrStoreUnavailable) {
			t.Fatalf("call %d: allowed %v, err %v; want denied, unwrapping to ErrStoreUnavailable", i, d.Allowed, d.Err)
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			if _, a := st.counts(); a == i+1 {
				break
			}
			if time.Now().After(deadline) {
				_, a := st.counts()
				t.Fatalf("call %d: %d abandons tried, want %d", i, a, i+1)
			}
		}
	}
	// No retry of a panicked abandon comes later (the first retry would
	// come 50 ms after its attempt).
	time.Sleep(200 * time.Millisecond)
	if r, a := st.counts(); r != calls || a != calls {
		t.Errorf("%d reservations and %d abandons, want %d of each (an abandon whose store panicked is not tried again)", r, a, calls)
	}
	out := logged.String()
	if n := strings.Count(out, "limiter: the store panicked while abandoning a lease"); n != calls {
		t.Errorf("%d panics logged, want %d; log:\n%.2000s", n, calls, out)
	}
	if !strings.Contains(out, "the store's bug") || !strings.Contains(out, "goroutine") {
		t.Errorf("the log does not give the panic's value and stack:\n%.2000s", out)
	}
}
