package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r27cDown is a downstream: a go-sdk handler whose GET streams the test
// may end (cut), recording the Last-Event-ID each GET came with; a request
// with an X-Hold header is instead held open as an event stream until its
// client leaves (another stream of the same principal, holding a place).
type r27cDown struct {
	sdk     http.Handler
	mu      sync.Mutex
	cuts    []context.CancelFunc
	lastIDs []string
}

func (d *r27cDown) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Hold") != "" {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	if r.Method == http.MethodGet {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		d.mu.Lock()
		d.cuts = append(d.cuts, cancel)
		d.lastIDs = append(d.lastIDs, r.Header.Get("Last-Event-ID"))
		d.mu.Unlock()
		r = r.WithContext(ctx)
	}
	d.sdk.ServeHTTP(w, r)
}

// cut ends every GET stream the downstream holds, as a downstream that
// ends its streams (or a proxy that cuts idle ones) does.
func (d *r27cDown) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.cuts {
		c()
	}
	d.cuts = nil
}

// r27cWaitLog waits up to 5 s for logs to hold want.
func r27cWaitLog(t *testing.T, logs *lockedLog, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("logs lack %q 5 s on:\n%s", want, logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReview27cReconnectRefused: a go-sdk client (its default MaxRetries)
// whose GET stream ends reconnects; when the principal's other streams
// hold every place, that GET is refused. The go-sdk client fails its
// whole session on any answer but a 2xx to a reconnecting GET (429 and
// 405 alike: only its first GET may be refused), so the refusal must not
// be an error status: the session must go on, and get its stream back
// once a place is free. The downstream must never see the gateway's own
// event ids.
func TestReview27cReconnectRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Second)
	defer cancel()
	var resets atomic.Int64
	srv := sdkServer(&resets)
	down := &r27cDown{sdk: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
	var logs lockedLog
	g, base := r27Gateway(t, down, Options{MaxStreams: 1}, &logs)
	g.streamRetry = 200 * time.Millisecond
	changed := make(chan struct{}, 10)
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{"viewer-token", http.DefaultTransport}},
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	r27WaitCounted(t, g, 1, "the session's GET stream")
	down.cut()
	r27WaitCounted(t, g, 0, "the cut stream")
	hold := r27Open(t, base, viewer, false, "X-Hold", "1")
	if hold.status != http.StatusOK {
		t.Fatalf("holding stream: status %d, want 200", hold.status)
	}
	// The client reconnects 1 to 2 s after its stream ended.
	r27cWaitLog(t, &logs, "method=GET outcome=CONCURRENCY_LIMIT_EXCEEDED")
	time.Sleep(300 * time.Millisecond)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_customer_record", Arguments: map[string]any{"customer_id": "CUST-00001"}})
	if err != nil || res.IsError {
		t.Fatalf("call after the reconnecting GET was refused: %v %+v", err, res)
	}
	// A place frees: the client's GET stream comes back.
	hold.close()
	r27WaitCounted(t, g, 1, "the session's stream once a place was free")
	// Counted as it is sent downstream: let the downstream take it as the
	// session's stream first.
	time.Sleep(300 * time.Millisecond)
	mcp.AddTool(srv, &mcp.Tool{Name: "trigger_refund"}, func(context.Context, *mcp.CallToolRequest, customerArgs) (*mcp.CallToolResult, record, error) {
		return nil, record{}, nil
	})
	select {
	case <-changed:
	case <-time.After(3 * time.Second):
		t.Fatal("notifications/tools/list_changed never reached the client: it never got its GET stream back")
	}
	down.mu.Lock()
	ids := append([]string(nil), down.lastIDs...)
	down.mu.Unlock()
	for _, id := range ids {
		if strings.HasPrefix(id, streamWaitPrefix) {
			t.Errorf("the downstream got the gateway's own event id %q", id)
		}
	}
}

// TestReview27cListenRefused: a go-sdk client of protocol 2026-07-28 whose
// subscriptions/listen is refused (429) goes on without it: Connect
// succeeds and its calls work. (The go-sdk does not send it again.)
func TestReview27cListenRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	var resets atomic.Int64
	srv := sdkServer(&resets)
	down := &r27cDown{sdk: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true})}
	var logs lockedLog
	g, base := r27Gateway(t, down, Options{MaxStreams: 1}, &logs)
	hold := r27Open(t, base, viewer, false, "X-Hold", "1")
	if hold.status != http.StatusOK {
		t.Fatalf("holding stream: status %d, want 200", hold.status)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{"viewer-token", http.DefaultTransport}},
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatalf("connect with its subscriptions/listen refused: %v", err)
	}
	defer cs.Close()
	r27cWaitLog(t, &logs, "method=subscriptions/listen outcome=CONCURRENCY_LIMIT_EXCEEDED")
	time.Sleep(300 * time.Millisecond)
	for range 2 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_customer_record", Arguments: map[string]any{"customer_id": "CUST-00001"}})
		if err != nil || res.IsError {
			t.Fatalf("call with the subscriptions/listen refused: %v %+v", err, res)
		}
	}
	hold.close()
	r27WaitCounted(t, g, 0, "the holding stream")
}

// TestReview27cResumeKept: a GET past the cap that resumes a downstream's
// stream (Last-Event-ID "d-7") is answered 200 with an event stream that
// ends at once, naming the refusal, with an event id of the gateway's that
// keeps "d-7" and the retry of the gateway; the refusal is logged and
// recorded. Resuming from that id once a place is free sends the
// downstream "d-7"; from a gateway's id that kept none, no Last-Event-ID.
// A session's first GET past the cap is still refused 429.
func TestReview27cResumeKept(t *testing.T) {
	down := &r27cDown{sdk: newStreamDown()}
	var logs lockedLog
	sink := &memSink{}
	g, base := r27Gateway(t, down, Options{MaxStreams: 1, Audit: sink}, &logs)
	hold := r27Open(t, base, viewer, false, "X-Hold", "1")
	s := r27Open(t, base, viewer, false, "Last-Event-ID", "d-7")
	if s.status != http.StatusOK || !isSSE(s.header) {
		t.Fatalf("resuming GET past the cap: status %d, %q, want 200 and an event stream", s.status, s.header.Get("Content-Type"))
	}
	r27Refusal(t, r27Open(t, base, viewer, false), "null")
	hold.close()
	r27WaitCounted(t, g, 0, "the holding stream")
	refused := sink.outcomes("")
	if len(refused) != 2 || refused[0].Allowed || refused[0].Code != "CONCURRENCY_LIMIT_EXCEEDED" || refused[0].Subject != "viewer" {
		t.Fatalf("records %+v, want two refusals CONCURRENCY_LIMIT_EXCEEDED of viewer", refused)
	}
	if !strings.Contains(logs.String(), "subject=viewer roles=viewer method=GET outcome=CONCURRENCY_LIMIT_EXCEEDED") {
		t.Fatalf("no deny line:\n%s", logs.String())
	}
	// The body: read it (r27Open reads only bodies of other types).
	req, _ := http.NewRequest(http.MethodGet, base+"/mcp", nil)
	req.Header.Set("Authorization", viewer)
	req.Header.Set("Last-Event-ID", "d-7")
	hold = r27Open(t, base, viewer, false, "X-Hold", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	hold.close()
	var id string
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			id = v
		}
	}
	if !strings.HasPrefix(id, streamWaitPrefix) || !strings.HasSuffix(id, "d-7") ||
		!strings.Contains(string(body), "\nretry: 5000\n\n") || !strings.HasPrefix(string(body), ": Too many requests: open stream limit exceeded") {
		t.Fatalf("body %q, want a comment naming the refusal, an id of the gateway's ending in d-7 and retry: 5000", body)
	}
	r27WaitCounted(t, g, 0, "the holding stream")
	for _, tc := range []struct{ sent, want string }{
		{id, "d-7"},
		{streamWaitPrefix + strings.Repeat("0", 25), ""},
	} {
		s := r27Open(t, base, viewer, false, "Last-Event-ID", tc.sent)
		if s.status != http.StatusOK {
			t.Fatalf("status %d, want 200", s.status)
		}
		down.mu.Lock()
		got := down.lastIDs[len(down.lastIDs)-1]
		down.mu.Unlock()
		if got != tc.want {
			t.Errorf("Last-Event-ID %q reached the downstream as %q, want %q", tc.sent, got, tc.want)
		}
		s.close()
		r27WaitCounted(t, g, 0, "the stream")
	}
}
