package gateway

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview63bHugeRetryAfter: a limiter store of the user's that denies a
// call with an enormous wait (time.Duration(math.MaxInt64), a "forever"
// the Batch contract lets through: any positive RetryAfter) was answered
// 429 with Retry-After: 1 and retry_after_seconds 1, the rounding up of
// the wait overflowing to a negative number of seconds, which the floor of
// one second then made a "retry at once": the client was told a falsehood,
// and retries every second a call that will be refused for centuries.
func TestReview63bHugeRetryAfter(t *testing.T) {
	store := limiter.StoreFunc(func(_ context.Context, _ time.Time, b *limiter.Batch) error {
		if !b.Release && !b.Refund {
			b.Denied, b.RetryAfter = 0, time.Duration(math.MaxInt64)
		}
		return nil
	})
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, &limiter.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	rg := newRig(t, &Options{Limiter: lim})
	got := rg.post(t, viewer, call(`1`, "get_customer_record", `{"id":"c1"}`))
	if got.status != http.StatusTooManyRequests {
		t.Fatalf("status %d: %s", got.status, got.body)
	}
	// The most seconds a time.Duration holds, as the guard writes and
	// mcpguard.DenialOf reads (63i: the gateway wrote one more).
	if ra := got.header.Get("Retry-After"); ra != "9223372036" {
		t.Errorf("Retry-After %q for a wait of %v: %s", ra, time.Duration(math.MaxInt64), got.body)
	}
	_, _, data := rpcErr(t, got.body)
	if s, _ := data["retry_after_seconds"].(float64); s != 9223372036 {
		t.Errorf("retry_after_seconds %v for a wait of %v", data["retry_after_seconds"], time.Duration(math.MaxInt64))
	}
}
