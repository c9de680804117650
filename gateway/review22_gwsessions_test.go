package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gwsClient sends raw requests to a gateway as one principal, with the
// protocol version that makes the go-sdk prime its streams with event ids.
type gwsClient struct {
	url, token string
}

func (c gwsClient) do(t *testing.T, ctx context.Context, method, sid, body string, hdr ...string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if sid != "" {
		req.Header.Set(hdrSession, sid)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s as %s: %v", method, c.token, err)
	}
	return resp
}

// open initializes a session and returns its id.
func (c gwsClient) open(t *testing.T, ctx context.Context) string {
	t.Helper()
	resp := c.do(t, ctx, http.MethodPost, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get(hdrSession)
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize as %s: %d, session %q", c.token, resp.StatusCode, sid)
	}
	resp = c.do(t, ctx, http.MethodPost, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized as %s: %d", c.token, resp.StatusCode)
	}
	return sid
}

// sseEvent is one event read from a stream: its id and data.
type sseEvent struct{ id, data string }

// readEvent reads the next event of br (nil at the end of the stream).
func readEvent(br *bufio.Reader) *sseEvent {
	var ev sseEvent
	seen := false
	for {
		line, err := br.ReadString('\n')
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if seen {
				return &ev
			}
			if err != nil {
				return nil
			}
			continue
		}
		seen = true
		switch {
		case strings.HasPrefix(line, "id:"):
			ev.id = strings.TrimSpace(line[3:])
		case strings.HasPrefix(line, "data:"):
			ev.data += strings.TrimSpace(line[5:])
		}
		if err != nil {
			return &ev
		}
	}
}

// TestReview22GwsessionsResumeAndAnswerAsAnother: a real go-sdk downstream,
// stateful, with one MemoryEventStore for all its sessions, so that its
// POST streams and GET stream can be resumed (protocol 2025-11-25 primes
// every stream with an event id). The admin calls a tool that asks its
// user (elicitation) on the call's event stream. The viewer, with a valid
// token of its own, then tries to take part in the admin's session:
// resuming the admin's call stream with its Last-Event-ID, on the admin's
// session (any case) and on its own; answering the admin's elicitation, on
// the admin's session and on its own; cancelling the admin's call; ending
// the admin's session. None of it reaches the admin's session or shows the
// viewer the admin's events, while the admin can still resume its own
// stream through the gateway and finish its call with its own answer.
func TestReview22GwsessionsResumeAndAnswerAsAnother(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	const secret = "the admin's question: reset key K-42?"
	srv := mcp.NewServer(&mcp.Implementation{Name: "asks", Version: "1"}, nil)
	answered := make(chan string, 4)
	mcp.AddTool(srv, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: secret,
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}})
		if err != nil {
			answered <- "error: " + err.Error()
			return nil, struct{}{}, err
		}
		b, _ := json.Marshal(res.Content)
		answered <- res.Action + " " + string(b)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, struct{}{}, nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	var mu sync.Mutex
	var leaked []string
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeaderSubject) == "viewer" {
			mu.Lock()
			leaked = append(leaked, r.Method+" "+r.Header.Get(hdrSession)+" "+r.Header.Get("Last-Event-ID"))
			mu.Unlock()
		}
		sdk.ServeHTTP(w, r)
	}))
	// A short Timeout: the gateway reads the admin's call stream on after
	// its client went, and only once it let go may the admin resume it
	// (the go-sdk answers 409 to a resumption of a stream still open).
	g, err := New(down.URL, DemoTokens(), &Options{Logger: discardLogger(), Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	admin := gwsClient{gw.URL + "/mcp", "admin-token"}
	viewer := gwsClient{gw.URL + "/mcp", "viewer-token"}
	asid := admin.open(t, ctx)
	vsid := viewer.open(t, ctx)
	mu.Lock()
	leaked = nil // the viewer's own initialize
	mu.Unlock()

	// The admin's call: the priming event, then the elicitation.
	callCtx, stopCall := context.WithCancel(ctx)
	defer stopCall()
	call := admin.do(t, callCtx, http.MethodPost, asid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
	defer call.Body.Close()
	br := bufio.NewReader(call.Body)
	var prime string
	var ask *sseEvent
	for ask == nil {
		ev := readEvent(br)
		if ev == nil {
			t.Fatal("the admin's call stream ended before the elicitation")
		}
		switch {
		case strings.Contains(ev.data, "elicitation/create"):
			ask = ev
		case ev.id != "" && prime == "":
			prime = ev.id
		}
	}
	if prime == "" || ask.id == "" {
		t.Fatalf("the gateway relayed no event ids (prime %q, elicitation %q): resumption broken", prime, ask.id)
	}
	var elicit struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal([]byte(ask.data), &elicit); err != nil || len(elicit.ID) == 0 {
		t.Fatalf("elicitation request %q: %v", ask.data, err)
	}
	// The admin's client loses the stream.
	stopCall()

	get := func(c gwsClient, sid, last string) (int, string) {
		t.Helper()
		rctx, rcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer rcancel()
		resp := c.do(t, rctx, http.MethodGet, sid, "", "Last-Event-ID", last)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body) // ends with rctx on a live stream
		return resp.StatusCode, string(b)
	}
	for _, sid := range []string{asid, strings.ToLower(asid), strings.ToUpper(asid)} {
		if st, body := get(viewer, sid, prime); st != http.StatusNotFound || strings.Contains(body, secret) {
			t.Errorf("viewer resuming the admin's stream on session %q: %d %q, want 404 and nothing of the admin's", sid, st, body)
		}
	}
	if _, body := get(viewer, vsid, prime); strings.Contains(body, secret) {
		t.Errorf("viewer resuming the admin's stream on its own session read the admin's events: %q", body)
	}
	answer := `{"jsonrpc":"2.0","id":` + string(elicit.ID) + `,"result":{"action":"accept","content":{"ok":true}}}`
	for _, sid := range []string{asid, strings.ToLower(asid)} {
		resp := viewer.do(t, ctx, http.MethodPost, sid, answer)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("viewer answering the admin's elicitation on %q: %d, want 404", sid, resp.StatusCode)
		}
		resp = viewer.do(t, ctx, http.MethodPost, sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("viewer cancelling the admin's call on %q: %d, want 404", sid, resp.StatusCode)
		}
		resp = viewer.do(t, ctx, http.MethodDelete, sid, "")
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("viewer ending the admin's session %q: %d, want 404", sid, resp.StatusCode)
		}
	}
	// On its own session the viewer's answer names no request of its own.
	resp := viewer.do(t, ctx, http.MethodPost, vsid, answer)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	select {
	case got := <-answered:
		t.Fatalf("the admin's elicitation was answered by the viewer: %s", got)
	case <-time.After(100 * time.Millisecond):
	}
	mu.Lock()
	for _, l := range leaked {
		if strings.Contains(strings.ToLower(l), strings.ToLower(asid)) {
			t.Errorf("a request of the viewer on the admin's session reached the downstream: %s", l)
		}
	}
	mu.Unlock()

	// The admin resumes its own call stream after the elicitation's event
	// (replaying nothing already seen), answers, and reads the result.
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	// The resumed stream's header may wait for its first event (the
	// answer's result), so the GET runs alongside the answer.
	got := make(chan *http.Response, 1)
	go func() {
		for {
			r := admin.do(t, rctx, http.MethodGet, asid, "", "Last-Event-ID", ask.id)
			if r.StatusCode != http.StatusConflict || rctx.Err() != nil {
				got <- r
				return
			}
			r.Body.Close()
			time.Sleep(50 * time.Millisecond)
		}
	}()
	time.Sleep(100 * time.Millisecond)
	resp = admin.do(t, ctx, http.MethodPost, asid, answer)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the admin's answer: %d", resp.StatusCode)
	}
	select {
	case got := <-answered:
		if !strings.HasPrefix(got, "accept") {
			t.Fatalf("the admin's elicitation ended with %q", got)
		}
	case <-ctx.Done():
		t.Fatal("the admin's answer never reached its elicitation")
	}
	res := <-got
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the admin resuming its own stream: %d", res.StatusCode)
	}
	rb := bufio.NewReader(res.Body)
	for {
		ev := readEvent(rb)
		if ev == nil {
			t.Fatal("the resumed stream ended without the call's result")
		}
		if strings.Contains(ev.data, `"id":2`) {
			if !strings.Contains(ev.data, "done") {
				t.Fatalf("the call's result: %q", ev.data)
			}
			break
		}
	}
}
