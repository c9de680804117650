package gateway

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview61IntentFailedDetail: the outcome record of a write refused
// because its intent could not be recorded had code AUDIT_UNAVAILABLE and
// an empty detail, where the library's guard says "write-ahead intent not
// recorded": an operator filtering one trail by the other's words missed
// it. The gateway's record says it too now.
func TestReview61IntentFailedDetail(t *testing.T) {
	var mu sync.Mutex
	var outcomes []audit.Event
	sink := audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
		if e.Phase == audit.PhaseIntent {
			return errors.New("review61: the disk is full")
		}
		mu.Lock()
		defer mu.Unlock()
		outcomes = append(outcomes, *e)
		return nil
	})
	rg := newRig(t, &Options{Policy: r57WritePolicy(t), Audit: sink})
	got := rg.post(t, viewer, call(`1`, "trigger_refund", `{"amount":5}`))
	if got.status != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503: %s", got.status, got.body)
	}
	if n := len(rg.down.log()); n != 0 {
		t.Fatalf("forwarded %d times", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(outcomes) != 1 || outcomes[0].Code != "AUDIT_UNAVAILABLE" || outcomes[0].Detail != "write-ahead intent not recorded" || outcomes[0].Allowed || outcomes[0].Cost != 0 {
		t.Fatalf("outcome records %+v, want one AUDIT_UNAVAILABLE, detail %q, not allowed, cost 0", outcomes, "write-ahead intent not recorded")
	}
}
