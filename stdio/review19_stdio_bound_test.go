package stdio

import (
	"strings"
	"testing"
)

// TestReview19BytesBoundExactAndBack: requests whose bytes in flight come
// to the bound exactly pass, and one more byte does not; the count of
// bytes goes back to zero once the calls are answered (cancelled here),
// and requests refused (busy, or reusing an id in flight) never counted:
// a leak would have every request refused for good once 64 MiB leaked.
func TestReview19BytesBoundExactAndBack(t *testing.T) {
	h := newBusyHarness(t, 100, "2025-11-25")
	h.waitLines(1)
	two, three := bigCallLine("2", "wait", 4000), bigCallLine("3", "wait", 5000)
	h.setMaxBytes(len(two) + len(three))
	h.send(two)
	h.send(three) // the bound exactly: passes
	h.send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	if line := h.waitFor(`"id":4,`); !strings.Contains(line, "-32029") {
		t.Errorf("a request past the bound of bytes: %s, want -32029", line)
	}
	h.send(two) // reuses id 2, in flight: refused, not counted
	h.waitFor(`"code":-32600`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`)
	for _, id := range []string{`"id":2,`, `"id":3,`} {
		if line := h.waitFor(id); strings.Contains(line, "-32029") {
			t.Errorf("a call at the bound of bytes exactly was refused: %s", line)
		}
	}
	h.s.mu.Lock()
	bytes, sizes, pending := h.s.bytes, len(h.s.sizes), len(h.s.pending)
	h.s.mu.Unlock()
	if bytes != 0 || sizes != 0 || pending != 0 {
		t.Errorf("after every call was answered: %d bytes in flight in %d sizes, %d requests; want none", bytes, sizes, pending)
	}
	h.end()
}
