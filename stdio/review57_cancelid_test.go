package stdio

import (
	"strings"
	"testing"
	"time"
)

// TestReview57CancelInexactRequestID: the go-sdk reads the requestId of a
// notifications/cancelled into an int64, as it reads ids, so a client that
// cancelled its request 5.5 (which the transport refuses) had the SDK
// cancel request 5, another call under way, and 9007199254740993 cancelled
// ...992. Such a cancellation is refused now; the call it would have hit
// goes on, and one with an exact id still cancels.
func TestReview57CancelInexactRequestID(t *testing.T) {
	h := newBusyHarness(t, 16, "2025-11-25")
	defer h.end()
	h.send(callLine("5", "wait"))
	h.send(callLine("9007199254740992", "wait"))
	for deadline := time.Now().Add(10 * time.Second); h.inFlight() != 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the calls are not in flight; output:\n%s", h.out)
		}
	}
	cancel := func(id string) string {
		return `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `}}`
	}
	h.send(cancel("5.5"))
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"requestId":9007199254740993}}`)
	h.send(`{"jsonrpc":"2.0","id":6,"method":"ping"}`)
	h.waitFor(`"id":6,`)
	time.Sleep(300 * time.Millisecond) // the SDK cancels in a goroutine of its own
	if out := h.out.String(); strings.Contains(out, `"id":5,`) || strings.Contains(out, `"id":9007199254740992,`) {
		t.Fatalf("a cancellation of request 5.5 or 9007199254740993 ended another call:\n%s", out)
	}
	if n := strings.Count(h.out.String(), `"error":{"code":-32600`); n != 2 {
		t.Errorf("%d cancellations refused; want 2:\n%s", n, h.out)
	}
	h.send(cancel("5"))
	h.send(cancel("9007199254740992"))
	h.waitFor(`"id":5,`)
	h.waitFor(`"id":9007199254740992,`)
}
