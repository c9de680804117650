package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"testing/iotest"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview35FailedElicitationIsNotAnExpiry pins what a caller is told, and what is recorded,
// when the client fails the confirmation question it is asked within the call (its elicitation
// handler returns an error) well before the confirmation expires: the write is refused as
// CONFIRMATION_REQUIRED "the user could not be asked to confirm" (not as an answer that came
// too late), the tool does not run, and the refusal's record says the elicitation failed.
func TestReview35FailedElicitationIsNotAnExpiry(t *testing.T) {
	// 2025-11-25 has no multi round-trip: the guard asks the client within the call.
	for _, v := range []string{"2025-11-25"} {
		t.Run(versionName(v), func(t *testing.T) {
			h := newHarness(t, basePolicy(false), nil)
			var asked atomic.Int64
			cs := h.connect(bob, clientOpts{version: v, elicit: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Add(1)
				return nil, errors.New("the client's dialog failed")
			}})
			res, err := call(t, cs, "wipe", map[string]any{"target": "db-1"})
			if err != nil {
				t.Fatal(err)
			}
			if code, msg := review35Refusal(t, res); code != string(mcpguard.CodeConfirmationRequired) ||
				msg != "the user could not be asked to confirm" {
				t.Errorf("result = %s, want CONFIRMATION_REQUIRED %q", mustJSON(res), "the user could not be asked to confirm")
			}
			if asked.Load() != 1 {
				t.Errorf("the client was asked %d times, want 1", asked.Load())
			}
			if n := h.down.calls.Load(); n != 0 {
				t.Errorf("tool ran %d times, want 0", n)
			}
			evs := eventsFor(h.sink.all(), "wipe")
			if len(evs) != 1 || evs[0].Allowed || evs[0].Code != string(mcpguard.CodeConfirmationRequired) || evs[0].Detail != "elicitation failed" {
				t.Errorf("records = %+v, want one refusal, CONFIRMATION_REQUIRED, detail %q", evs, "elicitation failed")
			}
		})
	}
}

// TestReview35ConfirmationNotPreparedIsRefused pins that a write needing confirmation whose
// confirmation state cannot be issued (here: the Signer's nonce source fails) is refused to the
// caller as INTERNAL "the confirmation could not be prepared" (an error result, not an empty
// one), the client is not asked, and the tool does not run.
func TestReview35ConfirmationNotPreparedIsRefused(t *testing.T) {
	broken := testSigner(t, &confirm.Options{Rand: iotest.ErrReader(errors.New("no entropy"))})
	h := newHarness(t, basePolicy(false), &mcpguard.Options{Confirmer: broken})
	var asked atomic.Int64
	cs := h.connect(bob, clientOpts{version: "2025-11-25", elicit: answer("accept", &asked)})
	res, err := call(t, cs, "wipe", map[string]any{"target": "db-1"})
	if err != nil {
		t.Fatal(err)
	}
	if code, msg := review35Refusal(t, res); code != string(mcpguard.CodeInternal) ||
		msg != "the confirmation could not be prepared" {
		t.Errorf("result = %s, want INTERNAL %q", mustJSON(res), "the confirmation could not be prepared")
	}
	if asked.Load() != 0 || h.down.calls.Load() != 0 {
		t.Errorf("asked %d times, tool ran %d times; want 0, 0", asked.Load(), h.down.calls.Load())
	}
}

// review35Refusal returns the code and message of the refusal a tool-error
// result carries on the wire, or "", "" for a result that is not an error.
func review35Refusal(t *testing.T, res *mcp.CallToolResult) (code, message string) {
	t.Helper()
	if res == nil || !res.IsError {
		return "", ""
	}
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("structured content %s: %v", raw, err)
	}
	return body.Error.Code, body.Error.Message
}
