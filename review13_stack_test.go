package mcpguard_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestConfirmationRacedAcrossSessions: one confirmation presented at once
// from several sessions of its principal runs the write once; the others
// are refused with CONFIRMATION_REQUIRED, and every attempt has one outcome
// record. The same confirmation sent with its arguments reordered,
// re-spaced or escaped differently (the same values) is the one the human
// approved; another value is not.
func TestConfirmationRacedAcrossSessions(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	signer := testSigner(t, nil)
	h := newHarness(t, basePolicy(false), &mcpguard.Options{Confirmer: signer, Now: func() time.Time { return now }})
	accept := mcp.InputResponseMap{confirm.InputKey: &mcp.ElicitResult{Action: "accept"}}
	issue := func(args string) string {
		t.Helper()
		hash, err := confirm.ArgsSHA256(json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		state, err := signer.Issue(now, confirm.Claims{Subject: "bob", Tool: "wipe", ArgsSHA256: hash})
		if err != nil {
			t.Fatal(err)
		}
		return state
	}

	const racers = 8
	sessions := make([]*mcp.ClientSession, racers)
	for i := range sessions {
		sessions[i] = h.connect(bob, clientOpts{version: "2025-11-25", noMRTR: true})
	}
	state := issue(`{"target":"db-1"}`)
	codes := make([]string, racers)
	var wg sync.WaitGroup
	for i, cs := range sessions {
		wg.Go(func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
				Name: "wipe", Arguments: json.RawMessage(`{"target":"db-1"}`), RequestState: state, InputResponses: accept,
			})
			if err != nil {
				codes[i] = "error: " + err.Error()
				return
			}
			codes[i] = errorCode(t, res)
		})
	}
	wg.Wait()
	ran := 0
	for i, c := range codes {
		switch c {
		case "":
			ran++
		case "CONFIRMATION_REQUIRED":
		default:
			t.Errorf("session %d: %q, want success or CONFIRMATION_REQUIRED", i, c)
		}
	}
	if ran != 1 || h.down.calls.Load() != 1 {
		t.Errorf("one confirmation raced from %d sessions: %d successes, the write ran %d times; want 1 and 1 (codes %q)", racers, ran, h.down.calls.Load(), codes)
	}
	if n := len(eventsFor(h.sink.all(), "wipe")); n != racers {
		t.Errorf("%d outcome records for %d attempts", n, racers)
	}

	cs := sessions[0]
	for _, tc := range []struct {
		name, confirmed, sent string
		runs                  bool
	}{
		{"respaced", `{"target":"db-2"}`, ` { "target" :	"db-2" } `, true},
		{"escaped", `{"target":"db-3"}`, `{"t\u0061rget":"db\u002d3"}`, true},
		{"other_value", `{"target":"db-4"}`, `{"target":"db-4 "}`, false},
		{"other_case", `{"target":"db-5"}`, `{"target":"DB-5"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := h.down.calls.Load()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
				Name: "wipe", Arguments: json.RawMessage(tc.sent), RequestState: issue(tc.confirmed), InputResponses: accept,
			})
			if err != nil {
				t.Fatal(err)
			}
			want := "CONFIRMATION_REQUIRED"
			if tc.runs {
				want = ""
			}
			if got := errorCode(t, res); got != want || (h.down.calls.Load() > before) != tc.runs {
				t.Errorf("confirmed %s, sent %s: code %q, ran %v; want %q, ran %v", tc.confirmed, tc.sent, got, h.down.calls.Load() > before, want, tc.runs)
			}
		})
	}
}
