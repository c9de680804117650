package gateway

import (
	"context"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestArgsKeyHidesArguments checks Options.ArgsKey: the audit events'
// argument hash is the keyed one (audit.ArgsHMAC) for allowed and refused
// calls alike, never the plain hash anyone can compute from a guess; a key
// shorter than 16 bytes is refused.
func TestArgsKeyHidesArguments(t *testing.T) {
	key := []byte("a key of thirty-two bytes, okay!")
	var mu sync.Mutex
	var events []audit.Event
	sink := audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, *e)
		return nil
	})
	rg := newRig(t, &Options{Audit: sink, ArgsKey: key})
	args := `{"key_id":"k-7"}`
	rg.post(t, viewer, call(`1`, "admin_reset_key", args)) // refused
	rg.post(t, admin, call(`2`, "admin_reset_key", args))  // allowed
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 2 {
		t.Fatalf("%d events, want 2", len(events))
	}
	for _, e := range events {
		if e.ArgsSHA256 != audit.ArgsHMAC(key, []byte(args)) {
			t.Errorf("%s's event: hash %s, want the keyed %s (plain: %s)", e.Subject, e.ArgsSHA256, audit.ArgsHMAC(key, []byte(args)), audit.ArgsSHA256([]byte(args)))
		}
	}
	if _, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{ArgsKey: []byte("short")}); err == nil {
		t.Error("a 5-byte ArgsKey was accepted")
	}
}
