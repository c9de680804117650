package stdio

import (
	"strings"
	"syscall"
	"testing"
)

// brokenPipe takes room bytes, then fails every write with EPIPE, as a
// pipe does whose reader reads that much and goes away: a write under way
// then returns the bytes it wrote with the error.
type brokenPipe struct {
	room int
}

func (b *brokenPipe) Write(p []byte) (int, error) {
	n := min(len(p), b.room)
	b.room -= n
	if n < len(p) {
		return n, syscall.EPIPE
	}
	return n, nil
}

func (b *brokenPipe) Close() error { return nil }

// TestWriterBrokenOutputHoldsNothing: when the client stops reading in the
// middle of an answer of the go-sdk's (it closes its end of the server's
// output while the answer is written), the write fails with part of the
// line out. The writer then held every later answer of its own back for
// the end of that line, which never comes, while the client, its input
// still open, could go on sending lines to refuse: memory grew with each.
// Once a write has failed, the output is gone: answers are dropped, and
// none is held.
func TestWriterBrokenOutputHoldsNothing(t *testing.T) {
	out := &brokenPipe{room: 1000}
	w := newWriter(out, newSession())
	if _, err := w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"pad":"` + strings.Repeat("a", 5000) + `"}}` + "\n")); err == nil {
		t.Fatal("the write to the broken output did not fail")
	}
	for range 10_000 {
		w.answer(errorLine(parseError("the line is not one JSON value")))
	}
	w.mu.Lock()
	held := len(w.queued)
	w.mu.Unlock()
	if held != 0 {
		t.Errorf("the writer holds %d answers after its output broke, want 0", held)
	}
}
