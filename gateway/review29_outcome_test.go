package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// r29Answer is how the downstream answers a tools/call: an HTTP status, a
// Content-Type and a body in which "ID" stands for the request's id.
type r29Answer struct {
	status int
	ctype  string
	body   string
}

const (
	r29Result   = `{"jsonrpc":"2.0","id":ID,"result":{"content":[]}}`
	r29IsError  = `{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"no"}],"isError":true}}`
	r29RPCError = `{"jsonrpc":"2.0","id":ID,"error":{"code":-32603,"message":"boom"}}`
)

// r29Outcomes sends body (one tools/call, or a batch of them) to a gateway
// (with Pins when pins) in front of a downstream answering every call with
// a, and returns the outcome records, at least want of them.
func r29Outcomes(t *testing.T, pins bool, a r29Answer, body string, sse bool, want int) []audit.Event {
	t.Helper()
	var mu sync.Mutex
	var events []audit.Event
	sink := audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if e.Phase == audit.PhaseOutcome {
			events = append(events, *e)
		}
		return nil
	})
	opts := &Options{Audit: sink}
	if pins {
		opts.Pins = TrustOnFirstUse()
	}
	url, _ := r28Gateway(t, opts, func(w http.ResponseWriter, _ *http.Request, req string) {
		var m struct{ ID json.RawMessage }
		json.Unmarshal([]byte(req), &m)
		msg := strings.ReplaceAll(a.body, "ID", string(m.ID))
		if a.ctype == "text/event-stream" {
			msg = "event: message\ndata: " + msg + "\n\n"
		}
		w.Header().Set("Content-Type", a.ctype)
		w.WriteHeader(a.status)
		io.WriteString(w, msg)
	})
	r28Post(t, url, body, sse)
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := len(events)
		mu.Unlock()
		if n >= want || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return append([]audit.Event(nil), events...)
}

// TestReview29OutcomeRecords: the outcome record of a forwarded tools/call
// says how the downstream answered where the gateway knows it. A single
// call answered with an HTTP error status (500, 503, 404), with a JSON or
// an event-stream body, is relayed as it is and recorded allowed with
// Code "", as before, but with the detail "downstream answered HTTP 503":
// before, its record was that of a success. A batch member answered so
// says the same (allowed when its JSON-RPC response was relayed,
// UPSTREAM_UNAVAILABLE when there was none to relay, as before); and where
// the gateway reads the answer anyway (a batch member's, every answer with
// Pins) a JSON-RPC error or a tool error (isError) says so too, as the
// guard's records do ("tool reported an error"). A single call's answer
// relayed byte for byte is not parsed: a 200 keeps no detail.
func TestReview29OutcomeRecords(t *testing.T) {
	single := call(`7`, "get_customer_record", "")
	batch := `[` + call(`1`, "get_customer_record", "") + `]`
	type want struct {
		allowed      bool
		code, detail string
	}
	ok := want{true, "", ""}
	cases := []struct {
		name  string
		pins  bool
		a     r29Answer
		batch bool
		sse   bool // the client accepts an event stream
		want  want
	}{
		// A single call, relayed byte for byte.
		{"single 200 JSON", false, r29Answer{200, "application/json", r29Result}, false, true, ok},
		{"single 200 JSON-RPC error (not parsed)", false, r29Answer{200, "application/json", r29RPCError}, false, true, ok},
		{"single 200 isError (not parsed)", false, r29Answer{200, "application/json", r29IsError}, false, true, ok},
		{"single 503 JSON", false, r29Answer{503, "application/json", r29RPCError}, false, true,
			want{true, "", "downstream answered HTTP 503"}},
		{"single 500 event stream", false, r29Answer{500, "text/event-stream", r29RPCError}, false, true,
			want{true, "", "downstream answered HTTP 500"}},
		{"single 404 text", false, r29Answer{404, "text/plain", "session not found"}, false, true,
			want{true, "", "downstream answered HTTP 404"}},
		// With Pins every answer is read.
		{"pins 200 JSON", true, r29Answer{200, "application/json", r29Result}, false, true, ok},
		{"pins 200 isError", true, r29Answer{200, "application/json", r29IsError}, false, true,
			want{true, "", "tool reported an error"}},
		{"pins 200 JSON-RPC error", true, r29Answer{200, "application/json", r29RPCError}, false, true,
			want{true, "", "downstream answered a JSON-RPC error"}},
		{"pins 200 event stream isError", true, r29Answer{200, "text/event-stream", r29IsError}, false, true,
			want{true, "", "tool reported an error"}},
		{"pins 503 JSON", true, r29Answer{503, "application/json", r29RPCError}, false, true,
			want{true, "", "downstream answered HTTP 503"}},
		// A batch member, collected as JSON or relayed in a merged stream.
		{"batch 200 JSON", false, r29Answer{200, "application/json", r29Result}, true, false, ok},
		{"batch 503 JSON-RPC error", false, r29Answer{503, "application/json", r29RPCError}, true, false,
			want{true, "", "downstream answered HTTP 503 with a JSON-RPC error"}},
		{"batch 503 text", false, r29Answer{503, "text/plain", "busy"}, true, false,
			want{false, "UPSTREAM_UNAVAILABLE", "downstream answered HTTP 503"}},
		{"batch 200 isError", false, r29Answer{200, "application/json", r29IsError}, true, false,
			want{true, "", "tool reported an error"}},
		{"batch 200 JSON-RPC error", false, r29Answer{200, "application/json", r29RPCError}, true, false,
			want{true, "", "downstream answered a JSON-RPC error"}},
		{"batch 500 event stream collected", false, r29Answer{500, "text/event-stream", r29Result}, true, false,
			want{true, "", "downstream answered HTTP 500"}},
		{"batch 500 event stream relayed", false, r29Answer{500, "text/event-stream", r29RPCError}, true, true,
			want{true, "", "downstream answered HTTP 500 with a JSON-RPC error"}},
		{"batch 200 event stream relayed isError", false, r29Answer{200, "text/event-stream", r29IsError}, true, true,
			want{true, "", "tool reported an error"}},
		{"batch 500 event stream without answer", false, r29Answer{500, "text/event-stream", `{"jsonrpc":"2.0","method":"notifications/x"}`}, true, true,
			want{false, "UPSTREAM_UNAVAILABLE", "downstream answered HTTP 500"}},
		{"batch pins 200 isError", true, r29Answer{200, "application/json", r29IsError}, true, false,
			want{true, "", "tool reported an error"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := single
			if tc.batch {
				body = batch
			}
			events := r29Outcomes(t, tc.pins, tc.a, body, tc.sse, 1)
			if len(events) != 1 {
				t.Fatalf("%d outcome records, want 1: %+v", len(events), events)
			}
			e := events[0]
			if got := (want{e.Allowed, e.Code, e.Detail}); got != tc.want {
				t.Errorf("record allowed=%v code=%q detail=%q, want allowed=%v code=%q detail=%q",
					got.allowed, got.code, got.detail, tc.want.allowed, tc.want.code, tc.want.detail)
			}
		})
	}
}

// TestReview29OutcomeRedirectStatus: a tools/call whose downstream
// redirects it is answered -32003 (the redirect is never relayed) and
// recorded UPSTREAM_UNAVAILABLE, with the status in the detail, single or
// in a batch.
func TestReview29OutcomeRedirectStatus(t *testing.T) {
	a := r29Answer{307, "text/plain", "elsewhere"}
	for _, body := range []string{call(`7`, "get_customer_record", ""), `[` + call(`1`, "get_customer_record", "") + `]`} {
		events := r29Outcomes(t, false, a, body, false, 1)
		if len(events) != 1 {
			t.Fatalf("%d outcome records, want 1", len(events))
		}
		if e := events[0]; e.Allowed || e.Code != "UPSTREAM_UNAVAILABLE" || e.Detail != "downstream answered HTTP 307" {
			t.Errorf("%s: record allowed=%v code=%q detail=%q", body, e.Allowed, e.Code, e.Detail)
		}
	}
}

// TestReview29OutcomeStatusClientGone: a single call answered with 503
// whose client goes away while the answer is relayed is recorded with the
// status, then the client's going, joined with "; ".
func TestReview29OutcomeStatusClientGone(t *testing.T) {
	var mu sync.Mutex
	var events []audit.Event
	sink := audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, *e)
		return nil
	})
	headerSent, release := make(chan struct{}), make(chan struct{})
	url, _ := r28Gateway(t, &Options{Audit: sink}, func(w http.ResponseWriter, _ *http.Request, _ string) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.(http.Flusher).Flush()
		close(headerSent)
		<-release
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-1,\"message\":\"x\"}}\n\n")
	})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/mcp", strings.NewReader(call(`7`, "get_customer_record", "")))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", viewer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	<-headerSent
	cancel()
	resp.Body.Close()
	time.Sleep(100 * time.Millisecond) // for the gateway to see the client gone
	close(release)
	want := "downstream answered HTTP 503; " + clientGone
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := len(events)
		mu.Unlock()
		if n > 0 {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 1 || events[0].Detail != want || !events[0].Allowed {
		t.Fatalf("records %+v, want one allowed with detail %q", events, want)
	}
}
