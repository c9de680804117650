package stdio

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBatchOverTheBoundIsInvalid: a batch of more requests than may ever
// be in flight can never pass, so it is refused as an invalid request
// (-32600, each of its ids answered), not as busy (-32029, "retry once
// some are answered"), which a client would retry for ever. A batch at
// the bound still passes.
func TestBatchOverTheBoundIsInvalid(t *testing.T) {
	h := newBusyHarness(t, 3, "2025-03-26")
	defer h.end()
	batch := func(ids ...int) string {
		var b strings.Builder
		b.WriteByte('[')
		for i, id := range ids {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"wait","arguments":{}}}`)
		}
		b.WriteByte(']')
		return b.String()
	}
	h.send(batch(10, 11, 12, 13))
	line := h.waitFor(`"id":13`)
	for _, id := range []string{"10", "11", "12", "13"} {
		if !strings.Contains(line, `"id":`+id+`,"error":{"code":-32600`) {
			t.Errorf("a batch of 4 requests with at most 3 in flight: %s; want -32600 for id %s", line, id)
		}
	}
	if strings.Contains(line, "retry") {
		t.Errorf("the refusal of a batch that can never pass asks for a retry: %s", line)
	}
	h.send(batch(20, 21, 22))
	for deadline := time.Now().Add(10 * time.Second); h.inFlight() != 3; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a batch of 3 with at most 3 in flight: %d in flight, want 3; output:\n%s", h.inFlight(), h.out)
		}
	}
}
