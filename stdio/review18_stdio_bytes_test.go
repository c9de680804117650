package stdio

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// bigCallLine is a call of tool whose arguments make the line about size
// bytes long.
func bigCallLine(id, tool string, size int) string {
	line := callLine(id, tool)
	pad := strings.Repeat("a", max(0, size-len(line)-len(`"pad":""`)))
	return strings.Replace(line, `"arguments":{}`, `"arguments":{"pad":"`+pad+`"}`, 1)
}

// setMaxBytes sets the bound of bytes in flight of h's session.
func (h *busyHarness) setMaxBytes(n int) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	h.s.maxBytes = n
}

// TestBusyBytesInFlightBounded: the bound of 4096 requests in flight is
// no bound of memory: the go-sdk holds the params of a call while it runs
// (a 1 MiB call to a slow handler held about 2 MiB of heap), so 4096
// calls of up to 16 MiB each could hold some 128 GiB. A request whose
// bytes, with those of the requests in flight, would pass the bound of
// bytes is now answered with -32029 and its id, and passes nothing; a
// small request still passes, a lone request of any size passes (a line
// the transport takes can always be served), and once answers are out
// big requests pass again.
func TestBusyBytesInFlightBounded(t *testing.T) {
	h := newBusyHarness(t, 100, "2025-11-25")
	h.waitLines(1)
	h.setMaxBytes(10_000)
	h.send(bigCallLine("2", "wait", 4000))
	h.send(bigCallLine("3", "wait", 4000))
	h.send(bigCallLine("4", "wait", 4000)) // 12,000 bytes: refused
	h.send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	if diff := cmp.Diff([]answer{{"4", codeBusy}}, flatAnswers(t, h.waitFor(`"id":4,`))); diff != "" {
		t.Errorf("answer to a call beyond the bytes in flight (-want +got):\n%s\nlog:\n%s", diff, h.logs)
	}
	if diff := cmp.Diff([]answer{{"5", 0}}, flatAnswers(t, h.waitFor(`"id":5,`))); diff != "" {
		t.Errorf("answer to a small request within the bound (-want +got):\n%s", diff)
	}
	if !strings.Contains(h.logs.String(), "bytes in flight") {
		t.Errorf("the refusal is not logged as one of bytes in flight:\n%s", h.logs)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	h.waitFor(`"id":2,`)
	h.send(bigCallLine("6", "wait", 4000)) // 8,000 bytes again: passes
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}}`)
	h.waitFor(`"id":3,`)
	if line := h.waitFor(`"id":6,`); strings.Contains(line, "-32029") {
		t.Errorf("a call within the bound once answers were out was refused: %s", line)
	}
	h.send(bigCallLine("7", "wait", 30_000)) // alone: passes
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)
	if line := h.waitFor(`"id":7,`); strings.Contains(line, "-32029") {
		t.Errorf("a lone request over the bound of bytes was refused: %s", line)
	}
	h.end()
}

// TestBusyBytesBatchAnsweredPerRequest: a batch whose requests would pass
// the bound of bytes in flight has each of them answered with -32029 and
// its id, in one batch answer, as for the bound of requests.
func TestBusyBytesBatchAnsweredPerRequest(t *testing.T) {
	h := newBusyHarness(t, 100, "2025-03-26")
	h.waitLines(1)
	h.setMaxBytes(10_000)
	h.send(bigCallLine("2", "wait", 4000))
	h.send(`[` + bigCallLine("3", "wait", 4000) + `,` + bigCallLine("4", "wait", 4000) + `]`)
	line := h.waitFor("-32029")
	var batch []json.RawMessage
	if err := json.Unmarshal([]byte(line), &batch); err != nil {
		t.Fatalf("the answer to a batch beyond the bytes in flight is %s, want a batch answer", line)
	}
	if diff := cmp.Diff([]answer{{"3", codeBusy}, {"4", codeBusy}}, flatAnswers(t, line), anyOrder); diff != "" {
		t.Errorf("answers to the batch (-want +got):\n%s", diff)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	h.waitFor(`"id":2,`)
	h.end()
}
