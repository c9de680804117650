package limiter_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// outage is a lease store that is down for a while: every Apply fails until
// up, when abandons and releases go through (reservations fail for good
// with reserves). It records when each abandon was tried.
type outage struct {
	up       time.Time // when the store comes back
	reserves bool      // reservations fail whenever
	mu       sync.Mutex
	tries    []time.Time
	freed    bool
}

func (s *outage) Apply(_ context.Context, _ time.Time, b *limiter.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if b.Release && b.Abandon {
		s.tries = append(s.tries, now)
	}
	if now.Before(s.up) || s.reserves && !b.Release {
		return errors.New("store down")
	}
	if b.Release {
		s.freed = true
	}
	b.Denied = -1
	return nil
}

func (s *outage) LeasesSlots() bool { return true }

// TestReview56AbandonRetriesForThirteenSeconds: Release documents that a
// release the store cannot take is "sent again in the background, as an
// abandon, for about 13 seconds" (and the abandon of a failed reservation
// retries "about 13 seconds in all"), after which the slots wait for their
// lease to expire (five minutes on Redis). The last attempt came at 6.35s,
// and the abandon then slept 6.4s more for nothing, holding one of the
// places of the abandons the limiter runs at once: a store down for 7 to 13
// seconds kept every slot of the outage held until its lease expired.
func TestReview56AbandonRetriesForThirteenSeconds(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, l *limiter.Limiter, s *outage)
	}{
		{"failed_reservation", func(t *testing.T, l *limiter.Limiter, s *outage) {
			s.mu.Lock()
			s.up, s.reserves = time.Now().Add(12*time.Second), true
			s.mu.Unlock()
			d := l.AllowAt(context.Background(), time.Now(), limiter.Request{User: "u", Calls: 1})
			if d.Allowed || d.Err == nil {
				t.Fatalf("a store down: allowed %v, err %v", d.Allowed, d.Err)
			}
		}},
		{"failed_release", func(t *testing.T, l *limiter.Limiter, s *outage) {
			d := l.AllowAt(context.Background(), time.Now(), limiter.Request{User: "u", Calls: 1})
			if !d.Allowed {
				t.Fatalf("denied: %v", d.Err)
			}
			s.mu.Lock()
			s.up = time.Now().Add(12 * time.Second)
			s.mu.Unlock()
			l.Release(d)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &outage{}
				l, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}},
					&limiter.Options{Store: s})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				tc.run(t, l, s)
				time.Sleep(time.Minute)
				synctest.Wait() // every abandon has ended
				s.mu.Lock()
				defer s.mu.Unlock()
				if !s.freed {
					var at []time.Duration
					for _, x := range s.tries {
						at = append(at, x.Sub(start))
					}
					t.Errorf("a store down for 12s: the slot was never freed; abandons tried at %v", at)
				}
			})
		})
	}
}
