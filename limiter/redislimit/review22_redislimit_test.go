package redislimit_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
)

// TestReview22AboveMaxNeverFits: a call taking more units than a limit's
// Max never fits (see [limiter.Limit]; the denial's RetryAfter is zero).
// The script decided "never" on the rounded-down increment instead, so on
// Redis's microsecond ticks a call up to a millionth above Max (a one-second
// window) took a full bucket.
func TestReview22AboveMaxNeverFits(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	t0 := time.Unix(1_700_000_000, 0)
	cases := []struct {
		limit limiter.Limit
		req   limiter.Request
	}{
		{limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 10, Window: time.Second},
			limiter.Request{Session: "s", Cost: 10.000005}},
		{limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 1.9999999, Window: time.Second},
			limiter.Request{Session: "s", Calls: 2}},
	}
	for i, tc := range cases {
		for _, clientTime := range []bool{false, true} {
			s := redislimit.New(c, &redislimit.Options{Prefix: "r22-" + strconv.Itoa(i) + strconv.FormatBool(clientTime) + ":", ClientTime: clientTime, Timeout: testTimeout})
			l := newLimiter(t, s, nil, tc.limit)
			d := l.AllowAt(context.Background(), t0, tc.req)
			if d.Allowed || d.Err != nil || d.Limit != tc.limit || d.RetryAfter != 0 {
				t.Errorf("ClientTime %v: AllowAt(%+v) under %v on a full bucket = allowed %v, limit %v, retry %v, err %v; want denied by it, retry 0",
					clientTime, tc.req, tc.limit, d.Allowed, d.Limit, d.RetryAfter, d.Err)
			}
			l.Release(d)
		}
	}
}

// TestReview22ConcurrencyNeedsLease: a reservation or release with a
// Concurrency check and no Lease is refused without a round trip. Before,
// every such reservation named the same slot ("instance:0"), so after the
// first one the others took nothing: a store called directly with Lease 0
// admitted any number of calls under a cap of one, where the MemoryStore
// counts them.
func TestReview22ConcurrencyNeedsLease(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	s := redislimit.New(c, &redislimit.Options{Prefix: "r22-lease:", Timeout: testTimeout})
	check := limiter.Check{ID: "c", Key: "k", Kind: limiter.Concurrency, N: 1, Max: 1}
	now := time.Now()
	for i := range 3 {
		b := &limiter.Batch{Checks: []limiter.Check{check}}
		if err := s.Apply(context.Background(), now, b); err == nil {
			t.Errorf("reservation %d without a Lease: Apply = nil (denied %d); want an error", i, b.Denied)
		}
	}
	if err := s.Apply(context.Background(), now, &limiter.Batch{Release: true, Checks: []limiter.Check{check}}); err == nil {
		t.Error("release without a Lease: Apply = nil; want an error")
	}
	// A Peek check takes no slot, and a rate check needs no lease.
	peek := check
	peek.Peek = true
	rate := limiter.Check{ID: "r", Key: "k", Kind: limiter.Rate, N: 1, Max: 5, Window: time.Minute}
	for _, cs := range [][]limiter.Check{{peek}, {rate}} {
		b := &limiter.Batch{Checks: cs}
		if err := s.Apply(context.Background(), now, b); err != nil || b.Denied != -1 {
			t.Errorf("Apply(%+v) without a Lease = %v, denied %d; want nil, -1", cs, err, b.Denied)
		}
	}
	// With leases, the cap of one holds.
	b1 := &limiter.Batch{Lease: 1, Checks: []limiter.Check{check}}
	b2 := &limiter.Batch{Lease: 2, Checks: []limiter.Check{check}}
	if err := s.Apply(context.Background(), now, b1); err != nil || b1.Denied != -1 {
		t.Fatalf("first leased reservation: %v, denied %d", err, b1.Denied)
	}
	if err := s.Apply(context.Background(), now, b2); err != nil || b2.Denied != 0 {
		t.Errorf("second leased reservation under a cap of one: %v, denied %d; want denied 0", err, b2.Denied)
	}
}
