package redislimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
)

// TestReview9RefundAfterRefillGivesBackOthersUnits is the Redis side of
// the memory store's finding (limiter/review9_refund_test.go): refunds
// "work the same on the memory store and on Redis", and Limiter.Refund's
// doc says a later refund gives a bucket that has meanwhile refilled
// completely nothing. A user expects refunding a decision whose unit came
// back long ago to change nothing. Instead the script's refund branch
// (script.go, mode "f") moves the key's TAT back by the decision's
// increment whatever happened since, so it hands back the unit of a call
// made after the refill (or after the key expired and was re-created), and
// two calls pass in one instant under a limit of one per minute.
func TestReview9RefundAfterRefillGivesBackOthersUnits(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	s := redislimit.New(c, &redislimit.Options{Prefix: "review9:", ClientTime: true, Timeout: testTimeout})
	l := newLimiter(t, s, nil, limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 1, Window: time.Minute})
	ctx := context.Background()
	t0 := time.Unix(1_800_000_000, 0)
	r := limiter.Request{Session: "s", Calls: 1}
	d1 := l.AllowAt(ctx, t0, r)
	if !d1.Allowed || d1.Err != nil {
		t.Fatalf("first call: %+v", d1)
	}
	later := t0.Add(2 * time.Minute) // the bucket was full again at t0+1m
	if d := l.AllowAt(ctx, later, r); !d.Allowed || d.Err != nil {
		t.Fatalf("call after the refill: %+v", d)
	}
	if err := l.Refund(ctx, later, d1); err != nil {
		t.Fatal(err)
	}
	if d := l.AllowAt(ctx, later, r); d.Allowed {
		t.Errorf("after refunding a decision whose unit had already refilled, a second call passes at t0+2m: 2 calls in one instant under a limit of 1 per minute (the refund gave back the other call's unit)")
	}
}
