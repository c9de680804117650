package gateway

import (
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestLimitErrorNever checks that a call refused by a rate or spend limit
// with no wait that helps (it takes more than the limit holds) gets no
// Retry-After and says it is not retryable, while a refusal that a wait
// cures carries the wait.
func TestLimitErrorNever(t *testing.T) {
	spend := limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour}
	never := limitError(limiter.Decision{Limit: spend})
	if never.retryAfter != 0 || never.data["retryable"] != false {
		t.Errorf("a call over the whole limit: retryAfter %v, data %v; want none and retryable false", never.retryAfter, never.data)
	}
	later := limitError(limiter.Decision{Limit: spend, RetryAfter: 3 * time.Second})
	if later.retryAfter != 3*time.Second || later.data["retryable"] != nil {
		t.Errorf("a call a refill lets through: retryAfter %v, data %v", later.retryAfter, later.data)
	}
	conc := limitError(limiter.Decision{Limit: limiter.Limit{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}})
	if conc.retryAfter != time.Second {
		t.Errorf("in-flight limit: retryAfter %v, want 1s", conc.retryAfter)
	}
}
