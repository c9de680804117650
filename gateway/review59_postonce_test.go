package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestReview59PostNeverSentTwiceThroughATransport: through net/http's
// Transport (Options.Transport), a tools/call whose client set an
// Idempotency-Key, written on a kept connection that the downstream closed
// after running it, was sent again on a new connection (net/http takes such
// a POST with GetBody for replayable) and ran twice; the gateway gives
// another Transport no GetBody for a POST now, so it runs once and the
// client is told the downstream failed.
func TestReview59PostNeverSentTwiceThroughATransport(t *testing.T) {
	var calls atomic.Int32
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(b), "trigger_refund") {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
			return
		}
		if calls.Add(1) == 1 {
			// The refund ran; the connection breaks before the answer.
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`)
	}))
	defer down.Close()
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), Transport: NewTransport()})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	defer gw.Close()
	rg := &rig{url: gw.URL}
	post := func(id, tool string) int {
		return rg.post(t, viewer, call(id, tool, `{"amount":1}`), "Idempotency-Key", "order-4711").status
	}
	post("1", "get_customer_record") // a kept connection to the downstream
	status := post("2", "trigger_refund")
	if n := calls.Load(); n != 1 || status != http.StatusBadGateway {
		t.Errorf("the downstream ran the call %d times, the client got %d; want once, 502", n, status)
	}
}
