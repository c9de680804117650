package confirm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestReview55NilNonceStoreFuncRefused: a nil NonceStoreFunc given as
// Options.Nonces is not the nil interface that means "a new
// MemoryNonceStore", so NewSigner took it, and the first confirmation
// panicked on the request path (a call of the nil func inside
// Ticket.Consume), as an unmade MemoryNonceStore did before review 29.
// NewSigner refuses it, and its Consume, reached some other way, returns
// an error (a store that cannot decide: the confirmation is refused)
// instead of panicking.
func TestReview55NilNonceStoreFuncRefused(t *testing.T) {
	var f NonceStoreFunc
	if _, err := NewSigner([]Key{{ID: "k1", Secret: secretA}}, &Options{Nonces: f}); err == nil {
		t.Errorf("NewSigner with a nil NonceStoreFunc: nil error, want it refused")
	}
	now := time.Unix(1_800_000_000, 0)
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("nil NonceStoreFunc: Consume panicked: %v", p)
			}
		}()
		if first, err := f.Consume(context.Background(), "n", now, now.Add(time.Minute)); err == nil || first {
			t.Errorf("nil NonceStoreFunc: Consume = %v, %v; want false and an error", first, err)
		}
	}()
}

// TestReview55DescribeShowsWholeToolName: Describe cut the tool name after
// 80 characters, like an argument value, though its doc says only that the
// name is shown with control and formatting characters removed. MCP tool
// names run to 128 characters (mcpguard's Guard serves names of up to 1024
// bytes), and a gateway's prefixed names reach past 80, so two tools whose
// names differ only after the 80th character were asked about in one and
// the same message: the human could not tell which of them the
// confirmation was for (the state binds the exact name, but the human
// approves the text).
func TestReview55DescribeShowsWholeToolName(t *testing.T) {
	prefix := "billing_service.customer_accounts.subscriptions.invoices.line_items.adjustments_" // 80 characters
	long := strings.Repeat("x", 300) + "_"
	args := json.RawMessage(`{"amount":5}`)
	for _, p := range []string{prefix, long} {
		keep, drop := p+"credit_note", p+"write_off_all"
		if a, b := Describe(keep, args), Describe(drop, args); a == b {
			t.Errorf("Describe gives the tools %q and %q one message:\n%s", keep, drop, a)
		}
		for _, name := range []string{keep, drop} {
			if got := Describe(name, args); !strings.Contains(got, "Run "+name+" with ") {
				t.Errorf("Describe(%q, %s) = %q; want the whole tool name", name, args, got)
			}
		}
	}
}
