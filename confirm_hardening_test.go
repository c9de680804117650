package mcpguard_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestConfirmReplayAfterNonceEviction: the default (memory) nonce
// store evicts a used nonce with whatever now the latest caller passed. A
// confirmed call whose clock read is at or after an earlier state's expiry
// evicts that state's nonce; a replay of the earlier state whose clock read
// is a moment before its expiry (a concurrent request, or a wall clock
// stepped back) then runs the tool a second time.
func TestConfirmReplayAfterNonceEviction(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var clock atomic.Int64
	clock.Store(t0.UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	h := newHarness(t, basePolicy(false), &mcpguard.Options{Now: now})
	cs := h.connect(bob, clientOpts{noMRTR: true})
	accept := mcp.InputResponseMap{confirm.InputKey: &mcp.ElicitResult{Action: "accept"}}

	confirmed := func(target string) string {
		t.Helper()
		res, err := call(t, cs, "wipe", map[string]any{"target": target})
		if err != nil || !res.NeedsInput() {
			t.Fatalf("first round: %v %s", err, mustJSON(res))
		}
		st := res.RequestState
		res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{
			Name: "wipe", Arguments: map[string]any{"target": target}, RequestState: st, InputResponses: accept,
		})
		if err != nil || res.IsError {
			t.Fatalf("confirmed round: %v %s", err, mustJSON(res))
		}
		return st
	}

	st := confirmed("db-1") // runs once
	clock.Store(t0.Add(confirm.DefaultTTL).UnixNano())
	confirmed("db-2") // another confirmed call at st's expiry: runs once, evicts st's nonce

	// The replay of st, its clock read 1ms before st's expiry.
	clock.Store(t0.Add(confirm.DefaultTTL - time.Millisecond).UnixNano())
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "wipe", Arguments: map[string]any{"target": "db-1"}, RequestState: st, InputResponses: accept,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := errorCode(t, res); got != "CONFIRMATION_REQUIRED" {
		t.Errorf("replayed confirmation: code %q, want CONFIRMATION_REQUIRED", got)
	}
	if n := h.down.calls.Load(); n != 2 {
		t.Errorf("tool ran %d times for 2 confirmations, want 2 (one confirmation ran it twice)", n)
	}
}
