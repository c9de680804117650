package limiter_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview64gNilReceivers: a nil *MemoryStore answers Apply with "not
// usable (make it with NewMemoryStore)", but its Len and Sweep (the call a
// periodic sweeper makes) panicked; a nil *Limiter's Refund, Kept and
// Release return, but its AllowAt and Limits panicked. None may panic.
func TestReview64gNilReceivers(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for name, f := range map[string]func(){
		"(*MemoryStore)(nil).Len":   func() { _ = (*limiter.MemoryStore)(nil).Len() },
		"(*MemoryStore)(nil).Sweep": func() { (*limiter.MemoryStore)(nil).Sweep(now) },
		"(*Limiter)(nil).AllowAt": func() {
			_ = (*limiter.Limiter)(nil).AllowAt(context.Background(), now, limiter.Request{Tool: "t", User: "u", Calls: 1})
		},
		"(*Limiter)(nil).Limits": func() { _ = (*limiter.Limiter)(nil).Limits() },
	} {
		func() {
			defer func() {
				if v := recover(); v != nil {
					t.Errorf("%s panicked: %v", name, v)
				}
			}()
			f()
		}()
	}
}
