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

	"github.com/mcpguard/mcpguard/audit"
)

// pollingDownstream answers a tools/call as the TypeScript SDK (1.32.2)
// does for a tool that calls extra.closeSSEStream() (SEP-1699 polling,
// Streamable HTTP 2025-11-25: a server may close a request's stream after
// its priming event and send the response later, on the GET the client
// resumes the stream with): an event stream holding the priming event
// (id and retry, empty data), ended at once, byte for byte as captured
// from a Node server (its chunked framing is net/http's here). The tool
// then runs on until release is closed; running counts the tools running.
type pollingDownstream struct {
	running atomic.Int64
	most    atomic.Int64
	release chan struct{}
	wg      sync.WaitGroup
}

func (d *pollingDownstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || !strings.Contains(string(body), `"tools/call"`) {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	n := d.running.Add(1)
	for m := d.most.Load(); n > m && !d.most.CompareAndSwap(m, n); m = d.most.Load() {
	}
	d.wg.Add(1)
	go func() { // the tool, still running after its stream was closed
		defer d.wg.Done()
		<-d.release
		d.running.Add(-1)
	}()
	h := w.Header()
	h["cache-control"] = []string{"no-cache, no-transform"}
	h["connection"] = []string{"keep-alive"}
	h["content-type"] = []string{"text/event-stream"}
	h["mcp-session-id"] = []string{"6aa5bffb-98c0-4c10-8e1c-8fcc09b5376b"}
	h["x-accel-buffering"] = []string{"no"}
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, "id: bab2e197-e2cb-4ba7-a69c-8af6e535f168_1796616100223_sth1bf0c\n"+
		"retry: 500\ndata: \n\n")
	// closeSSEStream: the stream ends here, the response comes later on a GET.
}

// TestReview58cPinnedPollingOutcome: with Pins the gateway reads a
// tools/call's event stream for its outcome record. The same polled call
// (its stream ended after the priming event, no response in it) is
// recorded allowed with no detail, as a call the downstream answered with
// a success, while a JSON answer holding no response is recorded
// "downstream's answer had no JSON-RPC response" (TestReview50PinnedCall
// AnswerRecorded). The package doc: "A call without an answer, or whose
// answer was cut short, says why"; the trail could not tell a polled call,
// whose result the gateway never saw, from one that succeeded. (That such a
// call leaves its in-flight place when its POST's stream ends is
// documented at Options.Limiter.)
func TestReview58cPinnedPollingOutcome(t *testing.T) {
	down := &pollingDownstream{release: make(chan struct{})}
	defer func() { close(down.release); down.wg.Wait() }()
	sink := &r58cSink{}
	post := r58cGateway(t, down, &Options{Pins: TrustOnFirstUse(), Audit: sink})
	if status, body := post("2"); status != http.StatusOK || !strings.Contains(body, "retry: 500") {
		t.Fatalf("call: %d %q; want 200 and the priming event", status, body)
	}
	evs := sink.outcomes()
	const want = "downstream ended the call's event stream without its JSON-RPC response " +
		"(a server that has its client poll sends it on a later GET, which the gateway does not tie to the call)"
	if len(evs) != 1 || !evs[0].Allowed || evs[0].Detail != want {
		t.Errorf("outcome records %+v; want one, allowed, detail %q", evs, want)
	}
}

// r58cSink keeps the outcome records of tools/call.
type r58cSink struct {
	mu  sync.Mutex
	evs []audit.Event
}

func (s *r58cSink) Write(_ context.Context, e *audit.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.Phase == audit.PhaseOutcome && e.Tool != "" {
		s.evs = append(s.evs, *e)
	}
	return nil
}

func (s *r58cSink) outcomes() []audit.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]audit.Event(nil), s.evs...)
}

// r58cGateway starts a gateway with o in front of down and returns a
// function posting a viewer's tools/call with id as the TypeScript SDK's
// client does, which returns the answer's status and body.
func r58cGateway(t *testing.T, down http.Handler, o *Options) func(id string) (int, string) {
	t.Helper()
	srv := newServer(t, down)
	o.Logger, o.Timeout = discardLogger(), 5*time.Second
	g, err := New(srv.URL+"/mcp", DemoTokens(), o)
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	return func(id string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, gw.URL+"/mcp",
			strings.NewReader(call(id, "get_customer_record", `{"id":"a1"}`)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", viewer)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Mcp-Session-Id", "6aa5bffb-98c0-4c10-8e1c-8fcc09b5376b")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}
