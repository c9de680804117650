package redislimit

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/limiter"
)

// review55Clocks are the clocks of a test that controls time (ClientTime):
// the zero time.Time and one before 1970, which TestReview24bEarlyClockWorks
// made work for rate and spend keys, and an ordinary one.
var review55Clocks = []time.Time{{}, time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(1_700_000_000, 0)}

// TestReview55EarlyClockLeases: with ClientTime and a clock before 1970
// (the zero time.Time of a test's clock, say), a slot's lease was scored by
// its expiry now+lease, a negative number, while the script takes every
// negative score for an abandoned lease's tombstone and writes a tombstone
// as minus the expiry, a positive score. So the client's resend of a
// reservation (after a lost reply) was read as the reservation of an
// abandoned lease and failed the decision ("unexpected script result [-2
// 0]"), and an abandon, which must free the lease's slot, wrote a positive
// score, which counted as a slot held: under a cap of one, every later call
// was refused until the key expired in real time, which each reservation
// moved on. A concurrency check at such a time now fails at once, saying
// why (the limiter refuses the call, as for any store failure), and touches
// nothing in Redis; at a time after 1970 Redis agrees with the memory
// store.
func TestReview55EarlyClockLeases(t *testing.T) {
	c := agreeClient(t)
	ctx := context.Background()
	chk := []limiter.Check{{ID: "c", Key: "k", Kind: limiter.Concurrency, Max: 1, N: 1}}
	run := func(s limiter.Store, t0 time.Time) []string {
		var got []string
		for i, b := range []*limiter.Batch{
			{Lease: 1, Checks: chk},                               // a reservation
			{Lease: 1, Checks: chk},                               // sent again
			{Release: true, Abandon: true, Lease: 1, Checks: chk}, // abandoned
			{Lease: 2, Checks: chk},                               // the slot is free
		} {
			err := s.Apply(ctx, t0.Add(time.Duration(i)*time.Second), b)
			if b.Release {
				// A release reports nothing but its error.
				got = append(got, fmt.Sprintf("err %v", err))
				continue
			}
			got = append(got, fmt.Sprintf("denied %d, err %v", b.Denied, err))
		}
		return got
	}
	for _, t0 := range review55Clocks {
		prefix := "r55l:" + t0.Format(time.RFC3339) + ":"
		s := New(c, &Options{Prefix: prefix, ClientTime: true, Timeout: 10 * time.Second})
		got := run(s, t0)
		if t0.UnixMicro() > 0 {
			if diff := cmp.Diff(run(limiter.NewMemoryStore(), t0), got); diff != "" {
				t.Errorf("clock %v: reserve, resend, abandon, reserve another lease: Redis disagrees with the memory store (-memory +redis):\n%s", t0, diff)
			}
			continue
		}
		for i, g := range got {
			if !strings.Contains(g, "needs a time after 1970") {
				t.Errorf("clock %v, batch %d: %s; want the check refused for its time", t0, i, g)
			}
		}
		if n, err := c.Exists(ctx, s.Key(chk[0])).Result(); err != nil || n != 0 {
			t.Errorf("clock %v: the slot's key exists (%d, %v): a refused check wrote it", t0, n, err)
		}
	}
}

// TestReview55EarlyClockRefundElapsed: Limiter.Refund measures the time
// since the decision between the nows passed to AllowAt and Refund, so that
// a late refund does not give back the refill a full bucket lost meanwhile.
// For a store with its own clock, a now outside int64 nanoseconds (before
// 1678) is read as "no time given" and replaced by time.Now, as the Redis
// store ignores it; but with ClientTime the Redis store decides at that
// now. With a test clock at the zero time.Time (or in 1600), a refund 30s
// after its decision then measured the microseconds of real time between
// the calls and gave back the whole minute the call took, 30s more than it
// may: under 2 calls per 2 minutes, a call at 0, another at 30s, the first
// refunded at 30s and a third call then leave the next call refused for
// 30s at 1m on the memory store (and on Redis at a clock after 1678), and
// for a few microseconds on Redis.
func TestReview55EarlyClockRefundElapsed(t *testing.T) {
	c := agreeClient(t)
	ctx := context.Background()
	for _, t0 := range append(review55Clocks, time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)) {
		mem, red := agreePair(t, c, "r55r:"+t0.Format(time.RFC3339)+":",
			limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 2, Window: 2 * time.Minute})
		run := func(l *limiter.Limiter) []string {
			r := limiter.Request{Session: "s", Calls: 1}
			d := l.AllowAt(ctx, t0, r)
			l.AllowAt(ctx, t0.Add(30*time.Second), r)
			if err := l.Refund(ctx, t0.Add(30*time.Second), d); err != nil {
				t.Fatalf("clock %v: refund: %v", t0, err)
			}
			return []string{
				agreeOutcome(l.AllowAt(ctx, t0.Add(30*time.Second), r)),
				agreeOutcome(l.AllowAt(ctx, t0.Add(time.Minute), r)),
			}
		}
		want := []string{"allowed", "denied by rate 2/2m0s per session, retry 30s"}
		if diff := cmp.Diff(want, run(mem)); diff != "" {
			t.Errorf("clock %v: memory store (-want +got):\n%s", t0, diff)
		}
		if diff := cmp.Diff(want, run(red)); diff != "" {
			t.Errorf("clock %v: Redis store (-want +got):\n%s", t0, diff)
		}
	}
}
