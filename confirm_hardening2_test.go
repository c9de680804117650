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

// TestConfirmReplayAfterClockStepBack checks that a confirmation used once
// stays used after the memory nonce store forgot it (a call at its expiry
// evicted it) and the clock then stepped back by more than the store's one
// minute of grace (a wall clock stepped back, Options.Now without a
// monotonic reading): the state looks unexpired again, but the store
// remembers the latest expiry it forgot.
func TestConfirmReplayAfterClockStepBack(t *testing.T) {
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
	st := confirmed("db-1")
	clock.Store(t0.Add(confirm.DefaultTTL).UnixNano())
	confirmed("db-2") // at st's expiry: evicts st's nonce
	// The clock steps back 90 seconds: st looks unexpired again.
	clock.Store(t0.Add(confirm.DefaultTTL - 90*time.Second).UnixNano())
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "wipe", Arguments: map[string]any{"target": "db-1"}, RequestState: st, InputResponses: accept,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := errorCode(t, res); got != "CONFIRMATION_REQUIRED" {
		t.Errorf("replayed confirmation after a 90s clock step: code %q, want CONFIRMATION_REQUIRED", got)
	}
	if n := h.down.calls.Load(); n != 2 {
		t.Errorf("tool ran %d times for 2 confirmations, want 2", n)
	}
}

// TestDescribeTellsTypesApart checks that the confirmation prompt, the
// human's only view of what is approved, shows a string that spells a JSON
// literal or number quoted: {"target":null} and {"target":"null"},
// {"force":true} and {"force":"true"}, {"amount":12.5} and
// {"amount":"12.5"} hash differently, and a schema with a type union
// accepts both.
func TestDescribeTellsTypesApart(t *testing.T) {
	for _, tc := range []struct{ name, a, b string }{
		{"null", `{"target":null}`, `{"target":"null"}`},
		{"bool", `{"force":true}`, `{"force":"true"}`},
		{"number", `{"amount":12.5}`, `{"amount":"12.5"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			da, db := confirm.Describe("wipe", []byte(tc.a)), confirm.Describe("wipe", []byte(tc.b))
			if da == db {
				t.Errorf("Describe(%s) == Describe(%s) == %q: the human cannot tell which is approved", tc.a, tc.b, da)
			}
		})
	}
}
