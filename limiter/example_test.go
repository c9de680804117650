package limiter_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// The starter template's limits: 5 calls and 10 cost units per minute per
// session. The sixth call is told exactly when to come back.
func Example() {
	l, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 5, Window: time.Minute},
		{Kind: limiter.Spend, Scope: limiter.Session, Max: 10, Window: time.Minute},
	}, nil)
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r := limiter.Request{Session: "demo-burst-session", Tool: "lookup", Calls: 1, Cost: 1}
	for i := 1; i <= 6; i++ {
		d := l.AllowAt(context.Background(), now, r)
		if d.Allowed {
			fmt.Printf("call %d: allowed\n", i)
		} else {
			fmt.Printf("call %d: denied by %v, retry after %v\n", i, d.Limit, d.RetryAfter)
		}
		l.Release(d)
	}
	d := l.AllowAt(context.Background(), now.Add(12*time.Second), r)
	fmt.Println("12s later:", d.Allowed)
	// Output:
	// call 1: allowed
	// call 2: allowed
	// call 3: allowed
	// call 4: allowed
	// call 5: allowed
	// call 6: denied by rate 5/1m0s per session, retry after 12s
	// 12s later: true
}

// RoboShop's admission: 60 calls a minute per user and 32 in flight across
// the process. The in-flight slot is released on every way out by defer.
func ExampleLimiter_Release() {
	l, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Max: 60, Window: time.Minute},
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 32},
	}, nil)
	if err != nil {
		panic(err)
	}
	handle := func(user string) (err error) {
		d := l.AllowAt(context.Background(), time.Now(), limiter.Request{Session: "s", User: user, Calls: 1})
		if !d.Allowed {
			return fmt.Errorf("%v limit exceeded (%v)", d.Limit.Kind, d.Limit.Scope)
		}
		defer l.Release(d)
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("recovered: %v", p)
			}
		}()
		panic("the handler crashed")
	}
	for range 40 {
		_ = handle("ann")
	}
	fmt.Println(handle("bob"))
	// Output:
	// recovered: the handler crashed
}

// A write is allowed and charged, then refused before it runs because its
// audit record cannot be written. Refund gives its call and cost back, so
// that the client's retry is not refused for a budget the failed call never
// used; without the refund, the third call would be denied.
func ExampleLimiter_Refund() {
	l, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 2, Window: time.Minute},
		{Kind: limiter.Spend, Scope: limiter.Session, Max: 10, Window: time.Minute},
	}, nil)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	auditUp := false
	call := func(i int) {
		d := l.AllowAt(ctx, now, limiter.Request{Session: "s", Tool: "refund_order", Write: true, Calls: 1, Cost: 5})
		defer l.Release(d)
		if !d.Allowed {
			fmt.Printf("call %d: denied by %v, retry after %v\n", i, d.Limit, d.RetryAfter)
			return
		}
		if !auditUp {
			if err := l.Refund(ctx, now, d); err != nil {
				fmt.Printf("call %d: refund failed: %v\n", i, err)
				return
			}
			fmt.Printf("call %d: audit unavailable, refused and refunded\n", i)
			return
		}
		fmt.Printf("call %d: ran\n", i)
	}
	call(1)
	auditUp = true
	for i := 2; i <= 4; i++ {
		call(i)
	}
	// Output:
	// call 1: audit unavailable, refused and refunded
	// call 2: ran
	// call 3: ran
	// call 4: denied by rate 2/1m0s per session, retry after 30s
}

func ExampleCheckCost() {
	for _, cost := range []float64{2.5, -1} {
		fmt.Println(limiter.CheckCost(cost))
	}
	// Output:
	// <nil>
	// limiter: invalid cost: -1 is not a finite number at least zero
}
