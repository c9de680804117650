package mcpguard_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard/confirm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review18Ask has bob's client (protocol 2026-07-28, driving the rounds by
// hand) asked to confirm wipe of target, and returns the state it was given.
func review18Ask(t *testing.T, cs *mcp.ClientSession, target string) string {
	t.Helper()
	res, err := call(t, cs, "wipe", map[string]any{"target": target})
	if err != nil || !res.NeedsInput() || res.RequestState == "" {
		t.Fatalf("asking round: %v %s", err, mustJSON(res))
	}
	return res.RequestState
}

func review18Round(t *testing.T, cs *mcp.ClientSession, target, state string, responses mcp.InputResponseMap) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "wipe", Arguments: map[string]any{"target": target}, RequestState: state, InputResponses: responses,
	})
	if err != nil {
		t.Fatalf("round with state %.20q…: %v", state, err)
	}
	return res
}

var review18Accept = mcp.InputResponseMap{confirm.InputKey: &mcp.ElicitResult{Action: "accept"}}

// TestConfirmationStateIsNoSealedState: the guard signs confirmations and
// sealed multi round-trip states with one key and one nonce store. A
// client that wraps its confirmation state in the form of a sealed state
// (the flag of a confirmed call's next round, which skips the
// confirmation, or any other flag), with or without an answer, or that
// presents the signed part of a sealed state as a confirmation, is
// refused, the tool does not run, and the honest round still runs once.
func TestConfirmationStateIsNoSealedState(t *testing.T) {
	h := newHarness(t, basePolicy(false), nil)
	cs := h.connect(bob, clientOpts{noMRTR: true})
	st := review18Ask(t, cs, "db-1")
	for name, forged := range map[string]struct {
		state string
		resp  mcp.InputResponseMap
	}{
		"confirmed_flag_no_answer": {"mcpguard.mrtr1c~" + st + "~", nil},
		"confirmed_flag_accept":    {"mcpguard.mrtr1c~" + st + "~", review18Accept},
		"plain_flag_accept":        {"mcpguard.mrtr1-~" + st + "~", review18Accept},
		"dry_run_flag_accept":      {"mcpguard.mrtr1d~" + st + "~", review18Accept},
		"inner_is_the_state":       {"mcpguard.mrtr1c~" + st + "~" + st, review18Accept},
	} {
		res := review18Round(t, cs, "db-1", forged.state, forged.resp)
		if code := errorCode(t, res); code == "" || h.down.calls.Load() != 0 {
			t.Errorf("%s: code %q, tool ran %d times; want a refusal and no run", name, code, h.down.calls.Load())
		}
	}
	if res := review18Round(t, cs, "db-1", st, review18Accept); errorCode(t, res) != "" || h.down.calls.Load() != 1 {
		t.Fatalf("the honest round after the forgeries: %s, tool ran %d times; want it to run once", mustJSON(res), h.down.calls.Load())
	}
}

// TestConfirmationStateAcrossProtocols: the state a client on 2026-07-28
// was given, sent back from bob's session on 2025-11-25 (whose
// confirmations are asked inside the call and whose states never leave the
// server), is still one state: a used one is refused there too, and a
// session on 2025-11-25 is never handed a state.
func TestConfirmationStateAcrossProtocols(t *testing.T) {
	h := newHarness(t, basePolicy(false), nil)
	newer := h.connect(bob, clientOpts{noMRTR: true})
	var asked atomic.Int64
	older := h.connect(bob, clientOpts{version: "2025-11-25", elicit: answer("decline", &asked)})

	st := review18Ask(t, newer, "db-1")
	if res := review18Round(t, newer, "db-1", st, review18Accept); errorCode(t, res) != "" || h.down.calls.Load() != 1 {
		t.Fatalf("accepted on 2026-07-28: %s, tool ran %d times", mustJSON(res), h.down.calls.Load())
	}
	res := review18Round(t, older, "db-1", st, review18Accept)
	if code := errorCode(t, res); code != "CONFIRMATION_REQUIRED" || h.down.calls.Load() != 1 {
		t.Errorf("the used state replayed from a 2025-11-25 session: code %q, tool ran %d times; want CONFIRMATION_REQUIRED, still once", code, h.down.calls.Load())
	}
	res = review18Round(t, older, "db-1", "", nil)
	if code := errorCode(t, res); code != "CONFIRMATION_REQUIRED" || asked.Load() != 1 || res.RequestState != "" || strings.Contains(mustJSON(res), st[:20]) {
		t.Errorf("a declined call on 2025-11-25: code %q, asked %d times, state %q; want CONFIRMATION_REQUIRED after one question, no state", code, asked.Load(), res.RequestState)
	}
}
