package limiter_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview64pNilIsZero: the Limiter doc says "The zero Limiter, and a
// nil one, has no limits and allows every call", and 71d76a3's commit says
// a nil Limiter is the zero one. They must answer alike, invalid costs
// included, and every method of a nil one must answer without a panic.
func TestReview64pNilIsZero(t *testing.T) {
	var nl *limiter.Limiter
	zl := &limiter.Limiter{}
	now := time.Now()
	for i, cost := range []float64{-1, math.NaN(), math.Inf(1), 0} {
		r := limiter.Request{Session: "s", User: "u", Tool: "t", Calls: 1, Cost: cost}
		if i == 3 {
			r.Calls = -1 // an invalid request too
		}
		zd := zl.AllowAt(context.Background(), now, r)
		nd := nl.AllowAt(context.Background(), now, r)
		if zd.Allowed != nd.Allowed || (zd.Err == nil) != (nd.Err == nil) {
			t.Errorf("cost %v: zero Limiter %+v, nil Limiter %+v: want alike", cost, zd, nd)
		}
	}
	d := nl.AllowAt(context.Background(), now, limiter.Request{Session: "s", Calls: 1})
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("nil Limiter's Release/Refund/Kept panicked: %v", r)
			}
		}()
		nl.Release(d)
		_ = nl.Refund(context.Background(), now, d)
		_ = nl.Kept(now, d)
	}()
	var ns *limiter.MemoryStore
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("nil MemoryStore's Apply panicked: %v", r)
			}
		}()
		_ = ns.Apply(context.Background(), now, &limiter.Batch{})
	}()
}
