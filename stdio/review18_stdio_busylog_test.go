package stdio

import (
	"strconv"
	"strings"
	"testing"
)

// TestBusyLogsRefusalsOnce: a client that floods a server whose handlers
// are slow has every request beyond the bound answered -32029, and each
// was a warning of its own: the log grew with the flood, one line per
// request sent (a hundred bytes of log for fifty of input), however fast
// the client sent. As for the stop, the first request refused is logged;
// the others refused until a request passes again are counted, in one line
// when it does (or when the input ends).
func TestBusyLogsRefusalsOnce(t *testing.T) {
	h := newBusyHarness(t, 1, "2025-11-25")
	h.waitLines(1)
	h.send(callLine("2", "wait"))
	const n = 50
	for i := range n {
		h.send(`{"jsonrpc":"2.0","id":"p-` + strconv.Itoa(i) + `","method":"ping"}`)
	}
	h.waitFor(`"id":"p-` + strconv.Itoa(n-1) + `"`)
	if got := strings.Count(h.out.String(), `"code":-32029`); got != n {
		t.Fatalf("%d answers -32029, want %d:\n%s", got, n, h.out)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	h.waitFor(`"id":2,`)
	h.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	h.waitFor(`"id":3,`)
	// A second flood after the first ended is logged again.
	h.send(callLine("4", "wait"))
	h.send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	h.waitFor(`"id":5,`)
	h.s.close() // or the drain at end of input waits DrainTimeout for call 4
	h.end()
	logs := h.logs.String()
	if c := strings.Count(logs, "code=-32029"); c != 2 {
		t.Errorf("%d log lines for the requests refused as busy, want 2 (the first of each flood):\n%s", c, logs)
	}
	if !strings.Contains(logs, "requests refused as busy") || !strings.Contains(logs, "requests="+strconv.Itoa(n)) {
		t.Errorf("no line counts the %d requests of the first flood:\n%s", n, logs)
	}
}
