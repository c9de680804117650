package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// streamDown is a recording downstream whose every answer is an event
// stream held open until its request ends or the test ends it (a value
// sent on end ends one stream). got records every request that reached
// it; open counts the streams it holds.
type streamDown struct {
	mu   sync.Mutex
	got  []string // method, then the body
	open atomic.Int64
	end  chan struct{}
}

func newStreamDown() *streamDown { return &streamDown{end: make(chan struct{})} }

func (d *streamDown) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body) // so that net/http watches the connection
	d.mu.Lock()
	d.got = append(d.got, r.Method+" "+string(body))
	d.mu.Unlock()
	d.open.Add(1)
	defer d.open.Add(-1)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	select {
	case <-r.Context().Done():
	case <-d.end:
	}
}

func (d *streamDown) received() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.got)
}

// r27Listen is a protocol 2026-07-28 subscriptions/listen request.
const r27Listen = `{"jsonrpc":"2.0","id":"l-1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`

// r27Stream is a stream opened through the gateway; close ends it from
// the client's side.
type r27Stream struct {
	status int
	header http.Header
	body   string // read only when the answer is not an event stream
	close  func()
}

// r27Open opens a GET stream (listen false) or a subscriptions/listen one
// as auth at the gateway base, with the header pairs hdr, returning once
// the answer's header came.
func r27Open(t *testing.T, base, auth string, listen bool, hdr ...string) r27Stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	method, body := http.MethodGet, io.Reader(nil)
	if listen {
		method, body = http.MethodPost, strings.NewReader(r27Listen)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+"/mcp", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if listen {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	timer := time.AfterFunc(5*time.Second, cancel)
	resp, err := http.DefaultClient.Do(req)
	timer.Stop()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := r27Stream{status: resp.StatusCode, header: resp.Header}
	if !isSSE(resp.Header) {
		b, _ := io.ReadAll(resp.Body)
		s.body = string(b)
	}
	var once sync.Once
	s.close = func() {
		once.Do(func() {
			cancel()
			resp.Body.Close()
		})
	}
	t.Cleanup(s.close)
	return s
}

// TestReview27DefaultStreamCap: with default Options, one principal may
// not hold more than 32 GET streams open through the gateway: a
// stateless downstream accepts any number, and each holds a downstream
// connection, a handler and its goroutines for as long as its client
// keeps it. The 33rd is refused (429) and never reaches the downstream.
func TestReview27DefaultStreamCap(t *testing.T) {
	d := newStreamDown()
	ds := newServer(t, d)
	t.Cleanup(ds.CloseClientConnections)
	g, err := New(ds.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	for i := range 32 {
		if s := r27Open(t, gw.URL, viewer, false); s.status != http.StatusOK {
			t.Fatalf("stream %d: status %d, want 200", i+1, s.status)
		}
	}
	s := r27Open(t, gw.URL, viewer, false)
	if s.status != http.StatusTooManyRequests {
		t.Fatalf("33rd stream: status %d, want 429 (default cap 32)", s.status)
	}
	if n := d.received(); n != 32 {
		t.Fatalf("%d requests reached the downstream, want 32", n)
	}
}

// roundTripFunc is an http.RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// r27Gateway is a gateway in front of h with opts (its Logger set to
// logs), served on loopback.
func r27Gateway(t *testing.T, h http.Handler, opts Options, logs *lockedLog) (*Gateway, string) {
	t.Helper()
	ds := newServer(t, h)
	// Run first: a handler left waiting on the downstream would hold the
	// gateway server's Close for good.
	t.Cleanup(ds.CloseClientConnections)
	opts.Logger = discardLogger()
	if logs != nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	g, err := New(ds.URL+"/mcp", DemoTokens(), &opts)
	if err != nil {
		t.Fatal(err)
	}
	return g, newServer(t, g).URL
}

// r27Counted returns the number of places g holds, over all principals.
func r27Counted(g *Gateway) int {
	g.streams.mu.Lock()
	defer g.streams.mu.Unlock()
	n := 0
	for _, k := range g.streams.open {
		n += k
	}
	return n
}

// r27WaitCounted waits up to 3 s for g to hold want places.
func r27WaitCounted(t *testing.T, g *Gateway, want int, what string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for r27Counted(g) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d stream places held 3 s on, want %d", what, r27Counted(g), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// r27Refusal checks s is the gateway's refusal of a stream past the cap,
// answering id (null for a GET).
func r27Refusal(t *testing.T, s r27Stream, id string) {
	t.Helper()
	if s.status != http.StatusTooManyRequests || s.header.Get("Retry-After") != "1" {
		t.Fatalf("status %d, Retry-After %q, want 429 and 1", s.status, s.header.Get("Retry-After"))
	}
	gotID, code, data := rpcErr(t, s.body)
	if string(gotID) != id || code != CodeLimitExceeded || data["code"] != "CONCURRENCY_LIMIT_EXCEEDED" ||
		data["correlation_id"] == nil || data["retry_after_seconds"] != 1.0 {
		t.Fatalf("refusal %s, want id %s, code %d, CONCURRENCY_LIMIT_EXCEEDED, a correlation id and retry_after_seconds 1", s.body, id, CodeLimitExceeded)
	}
}

// TestReview27StreamCapRefusal: past Options.MaxStreams, a principal's GET
// and subscriptions/listen streams are refused with -32029 and 429 (the
// GET's with a null id, the listen's with its own), never reach the
// downstream, and are logged and recorded as refusals naming the
// principal; another principal's streams are counted apart.
func TestReview27StreamCapRefusal(t *testing.T) {
	d := newStreamDown()
	var logs lockedLog
	sink := &memSink{}
	g, base := r27Gateway(t, d, Options{MaxStreams: 2, Audit: sink}, &logs)
	for _, listen := range []bool{false, true} {
		if s := r27Open(t, base, viewer, listen); s.status != http.StatusOK {
			t.Fatalf("viewer's stream (listen %v): status %d, want 200", listen, s.status)
		}
	}
	r27Refusal(t, r27Open(t, base, viewer, false), "null")
	r27Refusal(t, r27Open(t, base, viewer, true), `"l-1"`)
	if n := d.received(); n != 2 {
		t.Fatalf("%d requests reached the downstream, want 2", n)
	}
	// The admin's streams are its own.
	for range 2 {
		if s := r27Open(t, base, admin, false); s.status != http.StatusOK {
			t.Fatalf("admin's stream: status %d, want 200", s.status)
		}
	}
	r27Refusal(t, r27Open(t, base, admin, false), "null")
	if n := d.received(); n != 4 {
		t.Fatalf("%d requests reached the downstream, want 4", n)
	}
	refused := sink.outcomes("")
	var subjects []string
	for _, e := range refused {
		if e.Allowed || e.Code != "CONCURRENCY_LIMIT_EXCEEDED" || e.CorrelationID == "" {
			t.Errorf("record %+v, want a refusal CONCURRENCY_LIMIT_EXCEEDED with a correlation id", e)
		}
		subjects = append(subjects, e.Subject)
	}
	if got := strings.Join(subjects, ","); got != "viewer,viewer,admin" {
		t.Errorf("refusals recorded for %q, want viewer,viewer,admin", got)
	}
	out := logs.String()
	for _, want := range []string{
		"msg=deny cid=", "subject=viewer roles=viewer method=GET outcome=CONCURRENCY_LIMIT_EXCEEDED code=-32029",
		"subject=viewer roles=viewer method=subscriptions/listen outcome=CONCURRENCY_LIMIT_EXCEEDED",
		"subject=admin roles=admin method=GET outcome=CONCURRENCY_LIMIT_EXCEEDED",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
	if n := r27Counted(g); n != 4 {
		t.Fatalf("%d places held, want 4", n)
	}
}

// TestReview27StreamPlaceFreed: a stream's place is given back, once,
// however the stream ends: its client leaves, the downstream ends it, the
// gateway's server closes its connection, or it never was one (the
// downstream down, a 405, a timeout before its header, a Transport that
// panics, a session the caller may not use, an answer the pins refuse).
// One stream stays open throughout, and with MaxStreams 2 a place given
// back twice would let two more in.
func TestReview27StreamPlaceFreed(t *testing.T) {
	panicky := roundTripFunc(func(*http.Request) (*http.Response, error) { panic("boom") })
	for _, tc := range []struct {
		name   string
		listen bool
		opts   Options
		h      func(d *streamDown) http.Handler
		status int
		// end ends the stream s (nil: the gateway's answer ended it).
		end func(d *streamDown, gwClose func(), s r27Stream)
	}{
		{name: "client_leaves", status: 200, end: func(_ *streamDown, _ func(), s r27Stream) { s.close() }},
		{name: "client_leaves_listen", listen: true, status: 200, end: func(_ *streamDown, _ func(), s r27Stream) { s.close() }},
		{name: "client_leaves_pins", opts: Options{Pins: TrustOnFirstUse()}, status: 200, end: func(_ *streamDown, _ func(), s r27Stream) { s.close() }},
		{name: "downstream_ends", status: 200, end: func(d *streamDown, _ func(), _ r27Stream) { d.end <- struct{}{} }},
		{name: "downstream_ends_listen_pins", listen: true, opts: Options{Pins: TrustOnFirstUse()}, status: 200, end: func(d *streamDown, _ func(), _ r27Stream) { d.end <- struct{}{} }},
		{name: "server_closes_connections", status: 200, end: func(_ *streamDown, gwClose func(), _ r27Stream) { gwClose() }},
		{name: "downstream_405", status: 405, h: func(d *streamDown) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-R27-First") == "" {
					http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
					return
				}
				d.ServeHTTP(w, r)
			})
		}},
		{name: "downstream_fails", status: 502, h: func(d *streamDown) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-R27-First") == "" {
					panic(http.ErrAbortHandler) // connection closed, no answer
				}
				d.ServeHTTP(w, r)
			})
		}},
		{name: "timeout_before_header", status: 504, opts: Options{Timeout: 200 * time.Millisecond}, h: func(d *streamDown) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-R27-First") == "" {
					<-r.Context().Done()
					return
				}
				d.ServeHTTP(w, r)
			})
		}},
		{name: "transport_panics", status: 500, opts: Options{Transport: panicky}},
		{name: "unreadable_answer_pins", status: 502, opts: Options{Pins: TrustOnFirstUse()}, h: func(d *streamDown) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-R27-First") == "" {
					w.Header().Set("Content-Encoding", "gzip")
					w.WriteHeader(http.StatusOK)
					return
				}
				d.ServeHTTP(w, r)
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newStreamDown()
			var h http.Handler = d
			if tc.h != nil {
				h = tc.h(d)
			}
			opts := tc.opts
			opts.MaxStreams = 2
			var first http.RoundTripper
			if opts.Transport != nil {
				// The stream held throughout goes through; the others
				// meet the Transport under test.
				under := opts.Transport
				opts.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
					if r.Header.Get("X-R27-First") != "" {
						return first.RoundTrip(r)
					}
					return under.RoundTrip(r)
				})
				first = NewTransport()
			}
			ds := newServer(t, h)
			t.Cleanup(ds.CloseClientConnections)
			opts.Logger = discardLogger()
			g, err := New(ds.URL+"/mcp", DemoTokens(), &opts)
			if err != nil {
				t.Fatal(err)
			}
			gw := newServer(t, g)
			held := r27Open(t, gw.URL, viewer, false, "X-R27-First", "1")
			if held.status != http.StatusOK {
				t.Fatalf("the stream held: status %d, want 200", held.status)
			}
			for i := range 3 {
				s := r27Open(t, gw.URL, viewer, tc.listen)
				if s.status != tc.status {
					t.Fatalf("stream %d: status %d, want %d (%s)", i+1, s.status, tc.status, s.body)
				}
				if tc.end != nil {
					tc.end(d, gw.CloseClientConnections, s)
					if tc.name == "server_closes_connections" {
						held.close()
						r27WaitCounted(t, g, 0, "connections closed")
						held = r27Open(t, gw.URL, viewer, false, "X-R27-First", "1")
					}
				}
				r27WaitCounted(t, g, 1, "stream ended")
			}
			// Exactly one place is free: a place given back twice would
			// have freed the held stream's too.
			if s := r27Open(t, gw.URL, viewer, false, "X-R27-First", "1"); s.status != http.StatusOK {
				t.Fatalf("a stream past the held one: status %d, want 200 (%s)", s.status, s.body)
			}
			r27Refusal(t, r27Open(t, gw.URL, viewer, false, "X-R27-First", "1"), "null")
			held.close()
		})
	}
}

// TestReview27SessionRefusedFreesPlace: a GET on a session bound to
// another principal is refused (404) without keeping a place.
func TestReview27SessionRefusedFreesPlace(t *testing.T) {
	d := newStreamDown()
	g, base := r27Gateway(t, d, Options{MaxStreams: 1}, nil)
	g.sessions.bind("s-admin", "admin")
	for range 3 {
		if s := r27Open(t, base, viewer, false, hdrSession, "s-admin"); s.status != http.StatusNotFound {
			t.Fatalf("status %d, want 404", s.status)
		}
	}
	if n := r27Counted(g); n != 0 {
		t.Fatalf("%d places held after refusals, want 0", n)
	}
	if s := r27Open(t, base, viewer, false); s.status != http.StatusOK {
		t.Fatalf("status %d, want 200", s.status)
	}
}

// TestReview27StreamCapConcurrent: streams opened at once by one
// principal are let through up to the cap, never more.
func TestReview27StreamCapConcurrent(t *testing.T) {
	d := newStreamDown()
	g, base := r27Gateway(t, d, Options{MaxStreams: 5}, nil)
	var wg sync.WaitGroup
	var ok, refused atomic.Int64
	streams := make(chan r27Stream, 30)
	for i := range 30 {
		wg.Go(func() {
			s := r27Open(t, base, viewer, i%2 == 0)
			switch s.status {
			case http.StatusOK:
				ok.Add(1)
			case http.StatusTooManyRequests:
				refused.Add(1)
			}
			streams <- s
		})
	}
	wg.Wait()
	close(streams)
	if ok.Load() != 5 || refused.Load() != 25 || d.received() != 5 {
		t.Fatalf("%d let through, %d refused, %d at the downstream; want 5, 25, 5", ok.Load(), refused.Load(), d.received())
	}
	for s := range streams {
		s.close()
	}
	r27WaitCounted(t, g, 0, "every client gone")
	if g.streams.open == nil || len(g.streams.open) != 0 {
		t.Fatalf("the table holds %v once every stream ended, want it empty", g.streams.open)
	}
}

// TestReview27StreamCapOff: a negative MaxStreams caps nothing and
// counts nothing.
func TestReview27StreamCapOff(t *testing.T) {
	d := newStreamDown()
	g, base := r27Gateway(t, d, Options{MaxStreams: -1}, nil)
	for i := range 40 {
		if s := r27Open(t, base, viewer, false); s.status != http.StatusOK {
			t.Fatalf("stream %d: status %d, want 200", i+1, s.status)
		}
	}
	if len(g.streams.open) != 0 {
		t.Fatalf("streams counted without a cap: %v", g.streams.open)
	}
}

// TestReview27GoSDKClientWithoutStream: a go-sdk client (protocol
// 2025-11-25, a stateful downstream) whose GET stream the cap refuses
// goes on without it: its calls still work.
func TestReview27GoSDKClientWithoutStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resets atomic.Int64
	srv := sdkServer(&resets)
	var logs lockedLog
	g, base := r27Gateway(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil),
		Options{MaxStreams: 1}, &logs)
	first := connect(t, ctx, base+"/mcp", "viewer-token")
	r27WaitCounted(t, g, 1, "first session's stream")
	second := connect(t, ctx, base+"/mcp", "viewer-token")
	deadline := time.Now().Add(3 * time.Second)
	for !strings.Contains(logs.String(), "method=GET outcome=CONCURRENCY_LIMIT_EXCEEDED") {
		if time.Now().After(deadline) {
			t.Fatalf("the second session's GET stream was not refused:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, cs := range []*mcp.ClientSession{first, second} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_customer_record", Arguments: map[string]any{"customer_id": "CUST-00001"}})
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
	}
	first.Close()
	second.Close()
	r27WaitCounted(t, g, 0, "sessions closed")
}
