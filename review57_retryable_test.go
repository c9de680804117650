package mcpguard_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
)

// TestReview57DenialRetryable: DenialError.Retryable is the refusal's
// "retryable" on the wire, and survives DenialOf on the client's side (a
// user had to work out Code.Retryable() && RetryAfter >= 0 from the doc).
func TestReview57DenialRetryable(t *testing.T) {
	for _, c := range []struct {
		d    *mcpguard.DenialError
		want bool
	}{
		{&mcpguard.DenialError{Code: mcpguard.CodeRateLimitExceeded, RetryAfter: 5 * time.Second}, true},
		{&mcpguard.DenialError{Code: mcpguard.CodeSpendLimitExceeded, RetryAfter: -1}, false},
		{&mcpguard.DenialError{Code: mcpguard.CodeAuditUnavailable}, true},
		{&mcpguard.DenialError{Code: mcpguard.CodeForbidden}, false},
		{&mcpguard.DenialError{Code: mcpguard.CodeConfirmationRequired}, false},
	} {
		if got := c.d.Retryable(); got != c.want {
			t.Errorf("%s (RetryAfter %v).Retryable() = %v, want %v", c.d.Code, c.d.RetryAfter, got, c.want)
		}
		res := c.d.Result()
		var body struct {
			Error struct{ Retryable bool } `json:"error"`
		}
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, &body); err != nil || body.Error.Retryable != c.want {
			t.Errorf("%s: wire retryable %v (%v), want %v", c.d.Code, body.Error.Retryable, err, c.want)
		}
		back, ok := mcpguard.DenialOf(res, nil)
		if !ok || back.Retryable() != c.want {
			t.Errorf("%s: DenialOf(...).Retryable() = %v (%v), want %v", c.d.Code, back.Retryable(), ok, c.want)
		}
	}
}
