package stdio

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestReview20ListenCancelFitsItsRequest: the notifications/cancelled the
// transport hands the go-sdk for a subscriptions/listen call at the drain
// must fit in the SDK's frame, or the SDK ends the session on it with the
// calls under way. It was written with the id re-encoded, which can grow
// (an invalid UTF-8 byte becomes the three of U+FFFD), so a listen whose
// line was near the limit could be cancelled with a line beyond it. It now
// carries the id as read, and is never longer than the listen's own line.
func TestReview20ListenCancelFitsItsRequest(t *testing.T) {
	for _, id := range []string{
		`"` + strings.Repeat("\xff", 1000) + `"`,
		`"` + strings.Repeat(`\u0041`, 200) + `"`,
		`123456789012345.000000e0`, // an integer the go-sdk answers as 123456789012345
	} {
		line := `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{"notifications":{}}}`
		pass, msgs, batch, lerr := checkLine([]byte(line))
		if lerr != nil {
			t.Fatalf("%.60s: refused: %s", line, lerr.reason)
		}
		s := newSession()
		if e := s.admit(msgs, batch); e != nil {
			t.Fatalf("%.60s: refused: %s", line, e.reason)
		}
		r := newReader(io.NopCloser(strings.NewReader("")), newWriter(&lockedBuffer{}, s), s, slog.New(slog.DiscardHandler), time.Second)
		r.startDrain()
		got := strings.TrimSuffix(string(r.ready), "\n")
		if !strings.Contains(got, `"notifications/cancelled"`) {
			t.Fatalf("%.60s: no cancellation handed to the go-sdk: %q", line, got)
		}
		msgs2, err := sdkRead(t, r.ready)
		if err != nil || len(msgs2) != 1 {
			t.Fatalf("the go-sdk reads the cancellation %.80q as %d messages, %v", got, len(msgs2), err)
		}
		var cancel struct {
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if err := json.Unmarshal(r.ready, &cancel); err != nil {
			t.Fatal(err)
		}
		if k, ok := parseID(cancel.Params.RequestID); !ok || k != msgs[0].id {
			t.Errorf("the cancellation names id %s, want the listen's", cancel.Params.RequestID)
		}
		if len(got) > len(pass) {
			t.Errorf("the cancellation of a listen with id %.30s is %d bytes, its request %d: it may not fit in the go-sdk's frame", id, len(got), len(pass))
		}
	}
}

// TestReview20ListenCancelNamesItsCall: the id of a listen call is kept
// until the drain, past the read that brought it: the transport reads its
// input into one buffer, again and again, so the id must be its own copy,
// not the bytes of the buffer that later input overwrites.
func TestReview20ListenCancelNamesItsCall(t *testing.T) {
	h := newBusyHarness(t, 16, "2025-11-25")
	h.send(`{"jsonrpc":"2.0","id":"listen-77","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`)
	for deadline := time.Now().Add(5 * time.Second); h.inFlight() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the listen call is not in flight; output:\n%s", h.out)
		}
	}
	// Later input, read into the same buffer over the listen's bytes.
	h.send(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed","params":{"xx":"qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq"}}`)
	start := time.Now()
	h.end()
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the end of input took %v with only a listen in flight, want it cancelled at once; logs:\n%s", took.Round(time.Millisecond), h.logs)
	}
	h.waitFor(`"id":"listen-77"`)
}
