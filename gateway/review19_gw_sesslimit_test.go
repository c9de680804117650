package gateway

import (
	"net/http"
	"testing"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestSessionLimitIgnoresIDCase: the session table takes ids that differ
// only in ASCII case for one session (a downstream may read them so), and
// a per-session cap must too: sending one's own session id in other case
// must not open a fresh budget.
func TestSessionLimitIgnoresIDCase(t *testing.T) {
	rg := newRig(t, &Options{Limiter: reviewLimiter(t, limiter.Session, 1)})
	if got := rg.post(t, viewer, call(`1`, "get_customer_record", ""), "Mcp-Session-Id", "sess-abc"); got.status != http.StatusOK {
		t.Fatalf("first call in sess-abc: %d %s", got.status, got.body)
	}
	if got := rg.post(t, viewer, call(`2`, "get_customer_record", ""), "Mcp-Session-Id", "SESS-ABC"); got.status != http.StatusTooManyRequests {
		t.Errorf("second call, in SESS-ABC: status %d, want 429 (a per-session budget of 1, the same session to the table): %s", got.status, got.body)
	}
}
