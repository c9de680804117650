package gateway

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
)

// TestReview17fStreamEndedAfterCR checks an event stream delimited by the
// connection's close whose last line ending is a lone CR: a CRLF stream
// (the Python SDK's) closed between the CR and the LF of the event's
// blank line, or a last line ended by a CR. A CR ends a line (the SSE
// grammar; the go-sdk client trims it and dispatches the event), so the
// stream did not end inside a line: the answer is relayed whole and ends
// cleanly, in every mode, as the plain relay already did, and the call's
// outcome is the downstream's answer, not UPSTREAM_UNAVAILABLE.
func TestReview17fStreamEndedAfterCR(t *testing.T) {
	const (
		head   = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
		answer = `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`
	)
	for _, tc := range []struct {
		name, stream string
	}{
		{"crlf_cut_in_blank_line", "event: message\r\ndata: " + answer + "\r\n\r"},
		{"last_line_ended_by_cr", "event: message\ndata: " + answer + "\r"},
	} {
		for _, mode := range []string{"plain", "pins", "filter"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				url := cannedDownstream(t, head+tc.stream, nil)
				oc := &outcomeCodes{}
				o := &Options{Logger: discardLogger(), Timeout: 2 * time.Second, Audit: oc}
				body := inMode(o, mode)
				g, err := New(url+"/mcp", DemoTokens(), o)
				if err != nil {
					t.Fatal(err)
				}
				gw := newServer(t, g)
				status, got, err := readAnswer(t, gw.URL+"/mcp", http.MethodPost, body)
				if err != nil || status != http.StatusOK || !strings.Contains(got, `"result"`) {
					t.Errorf("a stream whose last line ends with a CR: %d %q (%v); want the answer, ended cleanly", status, got, err)
				}
				if mode == "filter" {
					return // no tools/call
				}
				if diff := cmp.Diff([]string{""}, oc.got()); diff != "" {
					t.Errorf("outcome records' codes (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestReview17fReadEventsLastCR checks readEvents on streams whose last
// line ending is a lone CR: the event is dispatched with its lines whole
// (each ending in LF, so that an eventWriter relays a complete event).
func TestReview17fReadEventsLastCR(t *testing.T) {
	for _, tc := range []struct {
		in    string
		lines []string
	}{
		{"data: 1\r\n\r", []string{"data: 1\r\n"}},
		{"event: message\ndata: 1\r", []string{"event: message\n", "data: 1\r\n"}},
		{"data: 1\r\n\r\ndata: 2\r", []string{"data: 1\r\n"}},
	} {
		var got [][]string
		err := readEvents(strings.NewReader(tc.in), func(ev *event) {
			var ls []string
			for _, l := range ev.lines {
				ls = append(ls, string(l))
			}
			got = append(got, ls)
		})
		if err != nil {
			t.Errorf("readEvents(%q): %v", tc.in, err)
			continue
		}
		if len(got) == 0 || !cmp.Equal(tc.lines, got[0]) {
			t.Errorf("readEvents(%q): events %q, want the first with lines %q", tc.in, got, tc.lines)
		}
	}
}

// TestReview17fCutStreamAfterClientLeftRecorded checks the outcome record
// of a tools/call whose client went away before its answer's first event
// and whose event stream then ended inside a line: the gateway reads the
// rest of the answer to learn how it ended (a POST's call outlives its
// client), and the record says that it was cut (UPSTREAM_UNAVAILABLE), as
// for a cut the framing shows, not that it was answered. A stream that
// ends at a line's end is recorded as answered.
func TestReview17fCutStreamAfterClientLeftRecorded(t *testing.T) {
	const head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
	for _, tc := range []struct {
		name, rest, want string
	}{
		{"ended_inside_line", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"res", "UPSTREAM_UNAVAILABLE"},
		{"ended_at_line_end", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			left := make(chan struct{})
			url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.ReadAll(req.Body)
				io.WriteString(c, head)
				<-left
				io.WriteString(c, tc.rest)
			})
			var mu sync.Mutex
			var got []string
			done := make(chan struct{})
			sink := audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
				if e.Phase == audit.PhaseOutcome {
					mu.Lock()
					got = append(got, e.Code+"|"+e.Detail)
					mu.Unlock()
					close(done)
				}
				return nil
			})
			g, err := New(url+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), Timeout: 2 * time.Second, Audit: sink})
			if err != nil {
				t.Fatal(err)
			}
			gw := newServer(t, g)
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL+"/mcp", strings.NewReader(call(`1`, "echo", "")))
			req.Header.Set("Authorization", viewer)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			cancel() // the client goes away once the header arrived
			resp.Body.Close()
			time.Sleep(200 * time.Millisecond) // the gateway notices
			close(left)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("no outcome record")
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 1 || !strings.HasPrefix(got[0], tc.want+"|") || !strings.Contains(got[0], "client") {
				t.Errorf("outcome record %q, want code %q with the client gone", got, tc.want)
			}
		})
	}
}
