package stdio

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestReview21DrainCancelsListensOnly: at the stop the transport hands the
// go-sdk a notifications/cancelled for each subscriptions/listen call in
// flight, and for nothing else: not for a call whose id is the listen's
// as a string is a number ("7" and 7 are two ids), nor for a call that
// reuses the id of a listen already answered. Such a call runs on until
// DrainTimeout, when the SDK cancels it with the end of input; a
// cancellation of the transport's would end it at once, with
// context.Canceled, and the client would lose a call it never cancelled.
func TestReview21DrainCancelsListensOnly(t *testing.T) {
	tests := []struct {
		name      string
		listenID  string
		callID    string
		cancelled bool // the client cancels its listen before the call
	}{
		{"string_and_number", `"7"`, `7`, false},
		{"id_reused_after_answer", `7`, `7`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const drain = time.Second
			h := newStopHarness(t, drain)
			h.send(`{"jsonrpc":"2.0","id":` + tt.listenID + `,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`)
			h.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
			waitLines(t, h.out, 3) // initialize, the listen's acknowledgement, ping
			if tt.cancelled {
				h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + tt.listenID + `}}`)
				waitLines(t, h.out, 4) // the listen's answer
			}
			h.send(callLine(tt.callID, "hold"))
			h.waitStarted(1)
			start := time.Now()
			close(h.stop)
			select {
			case cause := <-h.cause:
				if !errors.Is(cause, io.EOF) || errors.Is(cause, context.Canceled) {
					t.Errorf("the call %s ended %v after the stop with cause %v, want io.EOF at DrainTimeout (%v): the transport cancelled it as the listen %s",
						tt.callID, time.Since(start).Round(time.Millisecond), cause, drain, tt.listenID)
				}
			case <-time.After(drain + 5*time.Second):
				t.Fatal("the call was never cancelled")
			}
			h.releaseCalls()
			if err := h.waitRun(5 * time.Second); err != nil {
				t.Errorf("Run: %v", err)
			}
			if !tt.cancelled && !strings.Contains(h.out.String(), `"id":`+tt.listenID+`,"result"`) {
				t.Errorf("the listen %s was not answered at the stop:\n%s", tt.listenID, h.out)
			}
		})
	}
}
