package gateway

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readAnswer sends one request to the gateway at url as the viewer and
// reads the whole answer: status, body and the error the body's read
// ended with (nil for an answer read to a clean end).
func readAnswer(t *testing.T, url, method, body string) (int, string, error) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", viewer)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// chunk is one chunk of a chunked HTTP/1.1 body.
func chunk(s string) string { return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n" }

// TestReview17CutAnswerStaysCut checks that an answer the downstream cuts
// short after the gateway began relaying it (its connection closed inside
// a chunked body, a bad chunk, a silence past the timeout) reaches the
// client cut short too, as a read error, and not as a complete answer
// that ends cleanly: on the plain relay, with Pins, with FilterToolsList,
// for a POST's JSON or event stream and for a GET stream. A go-sdk client
// that reads a clean end after a cut line dispatches the cut event, fails
// to decode it and fails its whole session. Answers that did end (a
// complete chunked body, an event stream delimited by the connection's
// close) still read cleanly.
func TestReview17CutAnswerStaysCut(t *testing.T) {
	const (
		jsonHead = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
		sseHead  = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
		event    = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n"
		answer   = `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`
	)
	for _, tc := range []struct {
		name   string
		method string
		modes  []string
		answer string // written after the request, then the connection closes
		stall  bool   // the downstream falls silent instead of closing
		cut    bool
	}{
		{"json_closed_inside_chunked_body", http.MethodPost, []string{"plain"}, jsonHead + chunk(`{"jsonrpc":"2.0","id":1,`), false, true},
		{"json_bad_chunk_size", http.MethodPost, []string{"plain"}, jsonHead + chunk(`{"jsonrpc":"2.0","id":1,`) + "zz\r\n", false, true},
		{"sse_closed_inside_event", http.MethodPost, []string{"plain", "pins", "filter"}, sseHead + chunk(event) + chunk("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"res"), false, true},
		{"sse_closed_between_events", http.MethodPost, []string{"plain", "pins", "filter"}, sseHead + chunk(event), false, true},
		{"sse_silent_past_timeout", http.MethodPost, []string{"plain", "pins", "filter"}, sseHead + chunk(event), true, true},
		{"get_stream_bad_chunk", http.MethodGet, []string{"plain", "pins"}, sseHead + chunk(event) + "-1\r\n", false, true},
		// Answers that ended: read to a clean end.
		{"json_chunked_complete", http.MethodPost, []string{"plain", "pins", "filter"}, jsonHead + chunk(answer) + "0\r\n\r\n", false, false},
		{"sse_ended_by_close", http.MethodPost, []string{"plain", "pins", "filter"},
			"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + event + "event: message\ndata: " + answer + "\n\n", false, false},
	} {
		for _, mode := range tc.modes {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				release := make(chan struct{})
				defer close(release)
				var stall chan struct{}
				if tc.stall {
					stall = release
				}
				url := cannedDownstream(t, tc.answer, stall)
				o := &Options{Logger: discardLogger(), Timeout: 300 * time.Millisecond}
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
					t.Errorf("%s: a cut answer read as complete: %d %q", tc.method, status, got)
				case !tc.cut && err != nil:
					t.Errorf("%s: a complete answer read with error %v: %d %q", tc.method, err, status, got)
				}
			})
		}
	}
}

// TestReview17CutEventKeepsGoSDKSession runs a go-sdk client through the
// gateway to a go-sdk server whose answer to one call is cut inside an
// event (the connection closes in the middle of a data line): that call
// fails, and the session goes on; the next call is answered.
func TestReview17CutEventKeepsGoSDKSession(t *testing.T) {
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
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+
			chunk(`event: message`+"\n"+`data: {"jsonrpc":"2.0","id":`+string(id)+`,"result":{"content":[{"type":"text","text":"par`))
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

// cannedDownstream is a raw downstream that reads each request and writes
// answer as it is, then, when stall is not nil, waits for it to be closed
// before it closes the connection.
func cannedDownstream(t *testing.T, answer string, stall <-chan struct{}) string {
	t.Helper()
	return rawServer(t, func(c net.Conn, br *bufio.Reader) {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.ReadAll(req.Body)
		io.WriteString(c, answer)
		if stall != nil {
			<-stall
		}
	})
}

// inMode sets o up for the gateway mode named mode ("plain", "pins":
// trust on first use, "filter": FilterToolsList) and returns the body to
// POST: a tools/call of echo, or, in filter mode, a tools/list.
func inMode(o *Options, mode string) string {
	switch mode {
	case "pins":
		o.Pins = TrustOnFirstUse()
	case "filter":
		o.FilterToolsList = true
		return `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	}
	return call(`1`, "echo", "")
}

// outcomeCodes is an audit sink that keeps the codes of outcome records.
type outcomeCodes struct {
	mu    sync.Mutex
	codes []string
}

func (oc *outcomeCodes) Write(_ context.Context, e *audit.Event) error {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if e.Phase == audit.PhaseOutcome {
		oc.codes = append(oc.codes, e.Code)
	}
	return nil
}

// got returns the codes recorded so far.
func (oc *outcomeCodes) got() []string {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	return slices.Clone(oc.codes)
}
