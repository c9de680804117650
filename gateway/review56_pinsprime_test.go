package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestPinsRelayPrimingAndCloseEvents: with Pins, a go-sdk downstream at
// protocol 2025-11-25 (an event store) primes a call's event stream with
// an event of an id and empty data, and a tool that calls CloseSSEStream
// ends the stream with an event of a retry field and empty data, for the
// client to resume with a GET carrying that id (SEP-1699 polling). Such an
// event carries no message (a client dispatches none), yet the gateway
// dropped it as "not JSON": the client got a stream without an id and
// failed the call ("request terminated without response") instead of
// resuming it.
func TestPinsRelayPrimingAndCloseEvents(t *testing.T) {
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: prime\nid: 0_0\ndata: \n\n")
		io.WriteString(w, "event: close\nretry: 100\ndata: \n\n")
	}))
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), Pins: TrustOnFirstUse()})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{url: newServer(t, g).URL}
	got := rg.post(t, viewer, call("1", "get_customer_record", ""))
	if got.status != http.StatusOK {
		t.Fatalf("status %d, body %q", got.status, got.body)
	}
	for _, want := range []string{"id: 0_0\n", "retry: 100\n"} {
		if !strings.Contains(got.body, want) {
			t.Errorf("the stream relayed lacks %q: %q", want, got.body)
		}
	}
}
