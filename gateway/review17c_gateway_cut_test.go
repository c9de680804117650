package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview17cStreamEndedInsideLine checks an event stream whose body is
// delimited by the connection's close (no length, not chunked: HTTP/1.0,
// or Connection: close) and that ends inside a line: the downstream's
// connection closed in the middle of an event. No framing tells the
// gateway that the body was cut, but an event stream cannot end inside a
// line (the SSE specification discards such an event). On the plain relay
// a go-sdk client would dispatch the cut line and fail its whole session;
// with Pins or FilterToolsList, which drop the cut event, the client would
// read a clean end without an answer, and the call's outcome record would
// say it was answered. In every mode it reaches the client cut short, as a
// read error, and a tools/call's outcome is UPSTREAM_UNAVAILABLE. A stream
// that ends at a line's end (with or without the event's blank line) still
// reads cleanly.
func TestReview17cStreamEndedInsideLine(t *testing.T) {
	const (
		head  = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
		event = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n"
	)
	all := []string{"plain", "pins", "filter"}
	for _, tc := range []struct {
		name   string
		method string
		modes  []string
		answer string
		cut    bool
	}{
		{"post_inside_data_line", http.MethodPost, all, head + event + "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"res", true},
		{"post_inside_event_line", http.MethodPost, all, head + event + "event: mess", true},
		{"get_inside_data_line", http.MethodGet, []string{"plain", "pins"}, head + event + "data: {\"jsonrpc\":\"2.0\",\"me", true},
		{"http10_inside_data_line", http.MethodPost, all, "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + event + "data: {\"js", true},
		// Streams that end at a line's end: complete, read cleanly.
		{"post_after_blank_line", http.MethodPost, all, head + event, false},
		{"post_after_last_line", http.MethodPost, all, head + "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n", false},
		{"post_after_cr", http.MethodPost, []string{"plain"}, head + "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r", false},
		{"get_after_blank_line", http.MethodGet, []string{"plain", "pins"}, head + event, false},
	} {
		for _, mode := range tc.modes {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				url := cannedDownstream(t, tc.answer, nil)
				oc := &outcomeCodes{}
				o := &Options{Logger: discardLogger(), Timeout: 2 * time.Second, Audit: oc}
				body := inMode(o, mode)
				if tc.method == http.MethodGet {
					body = ""
				}
				g, err := New(url+"/mcp", DemoTokens(), o)
				if err != nil {
					t.Fatal(err)
				}
				gw := newServer(t, g)
				status, got, err := readAnswer(t, gw.URL+"/mcp", tc.method, body)
				switch {
				case tc.cut && err == nil:
					t.Errorf("%s: a stream ended inside a line read as complete: %d %q", tc.method, status, got)
				case !tc.cut && err != nil:
					t.Errorf("%s: a complete stream read with error %v: %d %q", tc.method, err, status, got)
				}
				if tc.method != http.MethodPost || mode == "filter" {
					return // no tools/call
				}
				want := []string{""}
				if tc.cut {
					want = []string{"UPSTREAM_UNAVAILABLE"}
				}
				if diff := cmp.Diff(want, oc.got()); diff != "" {
					t.Errorf("outcome records' codes (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestReview17cStreamEndedInsideLineKeepsGoSDKSession runs a go-sdk client
// through the gateway to a go-sdk server whose answer to one call is an
// event stream delimited by the connection's close that ends inside its
// data line: that call fails, and the session goes on.
func TestReview17cStreamEndedInsideLineKeepsGoSDKSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var resets atomic.Int64
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdkServer(&resets) }, nil)
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !bytes.Contains(body, []byte(`"name":"cut"`)) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			return
		}
		id := body[bytes.Index(body, []byte(`"id":`))+5:]
		id = id[:bytes.IndexAny(id, ",}")]
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"+
			"event: message\n"+`data: {"jsonrpc":"2.0","id":`+string(id)+`,"result":{"content":[{"type":"text","text":"par`)
	}))
	g, err := New(down.URL, DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	cs := connect(t, ctx, gw.URL+"/mcp", "viewer-token")
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "cut"}); err == nil {
		t.Errorf("the cut call succeeded: %+v", res)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_customer_record", Arguments: map[string]any{"customer_id": "CUST-00001"}})
	if err != nil || res.IsError {
		t.Fatalf("the call after the cut one: %v %+v; want it answered (the session goes on)", err, res)
	}
}
