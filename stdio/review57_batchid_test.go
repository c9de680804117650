package stdio

import (
	"strings"
	"testing"
	"time"
)

// TestReview57BatchInexactIDAnsweredAlone: a batch member whose number id
// the go-sdk would answer changed (5.5 as 5) made the transport refuse the
// whole batch with one error of id null: the client got no answer with the
// id of any of its requests, and the batch's good requests never ran,
// though the SDK takes the batch. Each such member is now answered alone,
// -32600 with its id as sent (null when a request with that id, as the SDK
// compares ids, is in flight), and the rest of the batch is served.
func TestReview57BatchInexactIDAnsweredAlone(t *testing.T) {
	h := newBusyHarness(t, 16, "2025-03-26")
	defer h.end()
	ping := func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` }

	h.send(`[` + ping("5.5") + `,` + ping("2") + `]`)
	if line := h.waitFor(`"id":5.5`); !strings.Contains(line, `"id":5.5,"error":{"code":-32600`) {
		t.Errorf("id 5.5 in a batch: %s; want -32600 with id 5.5", line)
	}
	if line := h.waitFor(`"id":2,`); !strings.Contains(line, `"id":2,"result"`) {
		t.Errorf("id 2 in a batch beside id 5.5: %s; want a result", line)
	}

	// Exponent spellings: 1e2 is served (answered as 100), 2.5e0 refused.
	h.send(`[` + ping("1e2") + `,` + ping("2.5e0") + `]`)
	if line := h.waitFor(`"id":2.5e0`); !strings.Contains(line, `"id":2.5e0,"error":{"code":-32600`) {
		t.Errorf("id 2.5e0 in a batch: %s; want -32600 with id 2.5e0", line)
	}
	if line := h.waitFor(`"id":100`); !strings.Contains(line, `"id":100,"result"`) {
		t.Errorf("id 1e2 in a batch: %s; want a result with id 100", line)
	}

	// A batch of such members alone: each answered, nothing passed.
	h.send(`[` + ping("7.5") + `,` + ping("8.25") + `]`)
	line := h.waitFor(`"id":7.5`)
	for _, id := range []string{"7.5", "8.25"} {
		if !strings.Contains(line, `"id":`+id+`,"error":{"code":-32600`) {
			t.Errorf("a batch of ids 7.5 and 8.25: %s; want -32600 for id %s", line, id)
		}
	}

	// An id that names, as the SDK compares ids, a request in flight is
	// answered as null: the answer would be taken for that request's.
	h.send(callLine("9", "wait"))
	for deadline := time.Now().Add(10 * time.Second); h.inFlight() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the call with id 9 is not in flight; output:\n%s", h.out)
		}
	}
	h.send(`[` + ping("9.5") + `,` + ping("10") + `]`)
	if line := h.waitFor(`"id":10,`); !strings.Contains(line, `"id":10,"result"`) {
		t.Errorf("id 10 in a batch beside id 9.5: %s; want a result", line)
	}
	if strings.Contains(h.out.String(), `"id":9.5`) {
		t.Errorf("id 9.5 answered with its id while id 9 is in flight:\n%s", h.out)
	}
	h.waitFor(`"id":null,"error":{"code":-32600,"message":"invalid request: batch member: a number`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`)
	h.waitFor(`"id":9,`)
}

// TestReview57BatchInexactIDRefusedWhole: where the go-sdk takes no batch
// (protocol 2025-06-18 on), a batch with such a member is still refused
// whole, in one answer.
func TestReview57BatchInexactIDRefusedWhole(t *testing.T) {
	h := newBusyHarness(t, 16, "2025-11-25")
	defer h.end()
	h.send(`[{"jsonrpc":"2.0","id":5.5,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	h.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	h.waitFor(`"id":3,`)
	out := h.out.String()
	if n := strings.Count(out, "\n"); n != 3 || !strings.Contains(out, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: JSON-RPC batches are not supported`) {
		t.Errorf("a batch with id 5.5 under 2025-11-25: want one answer, id null, batches not supported; output:\n%s", out)
	}
}
