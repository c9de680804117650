package limiter_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

var review9T0 = time.Unix(1_800_000_000, 0)

// TestReview9RefundAfterRefillGivesBackOthersUnits: Limiter.Refund's doc
// says a later refund "gives back at most what d took (a bucket that has
// meanwhile refilled completely gets nothing)", and the package doc
// promises that over any interval of length d at most Max + Max*d/Window
// units pass. A user expects that refunding a decision whose units have
// already come back changes nothing. Instead the refund moves the bucket's
// single TAT back by d's increment whatever happened since (memory.go
// MemoryStore.refund, refund.go): when the bucket refilled completely and
// another call then took from it, the refund gives that other call's unit
// back, and one more call passes in the same instant: two calls at once
// under a limit of one. Whether the key was kept or evicted meanwhile makes
// no difference.
func TestReview9RefundAfterRefillGivesBackOthersUnits(t *testing.T) {
	for _, evict := range []bool{false, true} {
		name := "kept"
		if evict {
			name = "evicted"
		}
		t.Run(name, func(t *testing.T) {
			mem := limiter.NewMemoryStore()
			l, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.Session, Max: 1, Window: time.Minute}}, &limiter.Options{Store: mem})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			r := limiter.Request{Session: "s", Calls: 1}
			d1 := l.AllowAt(ctx, review9T0, r)
			if !d1.Allowed {
				t.Fatalf("first call denied: %+v", d1)
			}
			// Two minutes later d1's unit came back long ago (the bucket was
			// full again at t0+1m).
			later := review9T0.Add(2 * time.Minute)
			if evict {
				mem.Sweep(later)
				if n := mem.Len(); n != 0 {
					t.Fatalf("Sweep left %d entries, want 0", n)
				}
			}
			if d := l.AllowAt(ctx, later, r); !d.Allowed {
				t.Fatalf("call after the refill denied: %+v", d)
			}
			// d1 is refunded only now (a slow write-ahead audit, say).
			if err := l.Refund(ctx, later, d1); err != nil {
				t.Fatal(err)
			}
			if d := l.AllowAt(ctx, later, r); d.Allowed {
				t.Errorf("after refunding a decision whose unit had already refilled, a second call passes at t0+2m: 2 calls in one instant under a limit of 1 per minute (the refund gave back the other call's unit)")
			}
		})
	}
}
