package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReview25HealthHidesFragment: the health answer, and the log lines
// naming the upstream, showed its #fragment, which shownURL kept while it
// dropped the user information and query as possible secrets (a fragment
// is never sent anywhere: only a secret pasted in with the URL can be
// there).
func TestReview25HealthHidesFragment(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	g, err := New("http://127.0.0.1:1/mcp?key=q-secret#f-secret", DemoTokens(), &Options{
		Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil)), Timeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if b := rec.Body.String(); strings.Contains(b, "secret") || !strings.Contains(b, "127.0.0.1:1/mcp") {
		t.Errorf("health answer %s: want the upstream without its query or fragment", b)
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(call("1", "get_customer_record", "")))
	r.Header.Set("Authorization", viewer)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	g.ServeHTTP(httptest.NewRecorder(), r)
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "upstream error") || strings.Contains(logs.String(), "secret") {
		t.Errorf("want an upstream error logged without the upstream's query or fragment:\n%s", logs.String())
	}
}

// sseDownstream answers a tools/list (with all, every request with a
// message id) with the event stream sse, where ID stands for the request's
// id; with hold, it keeps the stream open (without a further byte) for
// hold after it. Other requests with an id get an empty result.
func sseDownstream(t *testing.T, sse string, hold time.Duration, all bool) *httptest.Server {
	t.Helper()
	return newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(body, &m) != nil || m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if !all && m.Method != "tools/list" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, strings.ReplaceAll(sse, "ID", string(m.ID)))
		w.(http.Flusher).Flush()
		if hold > 0 {
			select {
			case <-time.After(hold):
			case <-r.Context().Done():
			}
		}
	}))
}

// TestReview25SSEListingShapes: a tools/list answer as an event stream in
// every shape a downstream may give it (its data over several lines, CRLF
// line endings, comments among its lines, a bare CR, an event never
// ended, one cut mid-line, one larger than any buffer, a second event
// after a harmless one): the tool the caller may not call (with
// FilterToolsList) or that the pins do not approve (with Pins), never
// reaches the client, through the filter, the checked pass-through (a
// tools/call's stream, with Pins) and a batch's merge.
func TestReview25SSEListingShapes(t *testing.T) {
	const (
		head   = `{"jsonrpc":"2.0","id":ID,"result":{"tools":[{"name":"get_customer_record"},`
		denied = `{"name":"admin_reset_key"}`
		tail   = `]}}`
	)
	big := `{"name":"get_customer_record","description":"` + strings.Repeat("x", 200<<10) + `"},`
	shapes := []struct {
		name string
		sse  string
		hold time.Duration
	}{
		{"one_line", "event: message\ndata: " + head + denied + tail + "\n\n", 0},
		{"data_over_lines", "event: message\ndata: " + head + "\ndata: " + denied + "\ndata:" + tail + "\n\n", 0},
		{"crlf", "event: message\r\ndata: " + head + denied + tail + "\r\n\r\n", 0},
		{"crlf_over_lines", "event: message\r\ndata: " + head + "\r\ndata: " + denied + tail + "\r\n\r\n", 0},
		{"comments", ": hi\nevent: message\n: between\ndata: " + head + "\n: more\ndata: " + denied + tail + "\n: end\n\n", 0},
		{"bare_cr", "event: message\rdata: " + head + denied + tail + "\r\r", 0},
		{"bare_cr_inside", "event: message\ndata: " + head + "\rdata: " + denied + tail + "\n\n", 0},
		{"crcrlf", "event: message\ndata: " + head + denied + tail + "\r\r\n\r\r\n", 0},
		{"no_blank_line_at_end", "event: message\ndata: " + head + denied + tail + "\n", 0},
		{"cut_mid_line", "event: message\ndata: " + head + denied + tail, 0},
		{"never_ended", "event: message\ndata: " + head + denied + tail + "\n", 1500 * time.Millisecond},
		{"larger_than_buffers", "event: message\ndata: " + head + big + denied + tail + "\n\n", 0},
		{"second_event", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\nid: 7\nevent: message\ndata: " + head + denied + tail + "\n\n", 0},
		{"bom", "\ufeffevent: message\ndata: " + head + denied + tail + "\n\n", 0},
		{"data_no_space", "data:" + head + denied + tail + "\n\n", 0},
		{"other_event_name", "event: other\ndata: " + head + denied + tail + "\n\n", 0},
		{"array_data", "event: message\ndata: [" + head + denied + tail + "]\n\n", 0},
		{"two_messages_in_event", "event: message\ndata: " + head + tail[1:] + "\ndata: " + head + denied + tail + "\n\n", 0},
		{"data_line_without_colon", "event: message\ndata\ndata: " + head + denied + tail + "\n\n", 0},
		{"spaced_data", "event: message\ndata:    " + head + denied + tail + "   \n\n", 0},
		{"nbsp_data", "event: message\ndata: \u00a0" + head + denied + tail + "\n\n", 0},
	}
	getRecord := ToolDigest(json.RawMessage(`{"name":"get_customer_record"}`))
	for _, mode := range []string{"filter", "pins"} {
		for _, shape := range shapes {
			t.Run(mode+"/"+shape.name, func(t *testing.T) {
				down := sseDownstream(t, shape.sse, shape.hold, mode == "pins")
				opts := &Options{Logger: discardLogger(), Timeout: 500 * time.Millisecond}
				if mode == "filter" {
					opts.FilterToolsList = true
				} else {
					p, err := ParsePins([]byte(`{"get_customer_record":"` + getRecord + `"}`))
					if err != nil {
						t.Fatal(err)
					}
					opts.Pins = p
				}
				g, err := New(down.URL+"/mcp", DemoTokens(), opts)
				if err != nil {
					t.Fatal(err)
				}
				gw := newServer(t, g)
				rg := &rig{url: gw.URL}
				bodies := []string{
					`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
					`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
				}
				if mode == "pins" {
					// Any answer may carry a listing: a tools/call's stream.
					bodies = append(bodies, call("3", "get_customer_record", ""))
				}
				for _, body := range bodies {
					got := rg.post(t, viewer, body, "Mcp-Protocol-Version", "2025-03-26")
					if strings.Contains(got.body, "admin_reset_key") {
						t.Errorf("%s: the withheld tool reached the client (%d):\n%.300s", body, got.status, got.body)
					}
				}
			})
		}
	}
}

// TestReview25BodyEdges: the request body read before the token, at its
// edges over a real connection: exactly MaxBodyBytes and one more, declared
// or chunked, with Expect: 100-continue, from an HTTP/1.0 client, and a
// Content-Length shorter or longer than what is sent. Each ends in the
// status a client needs, and nothing is forwarded unread.
func TestReview25BodyEdges(t *testing.T) {
	const max = 1000
	// As the examples/gateway binary serves it: the whole request within
	// the timeout.
	d := &downstream{}
	dsrv := newServer(t, d)
	g, err := New(dsrv.URL+"/mcp", DemoTokens(), &Options{MaxBodyBytes: max, Timeout: 500 * time.Millisecond, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewUnstartedServer(g)
	gw.Config.ReadTimeout = 500 * time.Millisecond
	gw.Start()
	t.Cleanup(gw.Close)
	rg := &rig{url: gw.URL, down: d}
	pad := func(n int) string {
		// A tools/call padded with spaces to n bytes.
		c := call("1", "get_customer_record", "")
		return c + strings.Repeat(" ", n-len(c))
	}
	addr := strings.TrimPrefix(rg.url, "http://")
	send := func(t *testing.T, raw string, after string) (int, string) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, raw)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return 0, err.Error()
		}
		if resp.StatusCode == http.StatusContinue {
			io.WriteString(c, after)
			resp, err = http.ReadResponse(br, nil)
			if err != nil {
				return 0, err.Error()
			}
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	hdr := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer viewer-token\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\n"
	chunked := func(s string) string {
		var b strings.Builder
		for len(s) > 0 {
			n := min(7, len(s))
			fmt.Fprintf(&b, "%x\r\n%s\r\n", n, s[:n])
			s = s[n:]
		}
		return b.String() + "0\r\n\r\n"
	}
	for _, tc := range []struct {
		name  string
		raw   string
		after string
		want  int
	}{
		{"length_shorter_than_sent", hdr + "Content-Length: 900\r\n\r\n" + pad(max), "", 200},
		{"exactly_max", hdr + "Content-Length: 1000\r\n\r\n" + pad(max), "", 200},
		{"max_plus_one", hdr + "Content-Length: 1001\r\n\r\n" + pad(max+1), "", 413},
		{"chunked_exactly_max", hdr + "Transfer-Encoding: chunked\r\n\r\n" + chunked(pad(max)), "", 200},
		{"chunked_max_plus_one", hdr + "Transfer-Encoding: chunked\r\n\r\n" + chunked(pad(max+1)), "", 413},
		{"expect_continue", hdr + "Expect: 100-continue\r\nContent-Length: 1000\r\n\r\n", pad(max), 200},
		{"expect_continue_too_large", hdr + "Expect: 100-continue\r\nContent-Length: 1001\r\n\r\n", pad(max + 1), 413},
		{"http10", strings.Replace(hdr, "HTTP/1.1", "HTTP/1.0", 1) + "Content-Length: 1000\r\n\r\n" + pad(max), "", 200},
		{"http10_no_length", strings.Replace(hdr, "HTTP/1.1", "HTTP/1.0", 1) + "\r\n" + pad(max), "", 400},
		{"length_longer_than_sent", hdr + "Content-Length: 900\r\n\r\n" + pad(800), "", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(rg.down.log())
			got, body := send(t, tc.raw, tc.after)
			if got != tc.want {
				t.Errorf("status %d, want %d: %.300s", got, tc.want, body)
			}
			forwarded := len(rg.down.log()) - n
			if (tc.want == 200) != (forwarded == 1) {
				t.Errorf("%d requests forwarded", forwarded)
			}
		})
	}
}
