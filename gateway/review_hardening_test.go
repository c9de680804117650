package gateway

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/policy"
)

// countingTransport is a downstream that answers every request at once with
// 200, counts them, and hands out the session id "victim-sess" to an
// initialize.
type countingTransport struct{ n atomic.Int64 }

func (rt *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.n.Add(1)
	var b []byte
	if r.Body != nil {
		b, _ = io.ReadAll(r.Body)
	}
	h := http.Header{"Content-Type": {"application/json"}}
	if strings.Contains(string(b), `"initialize"`) {
		h.Set("Mcp-Session-Id", "victim-sess")
	}
	return &http.Response{StatusCode: http.StatusOK, Header: h,
		Body: io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{}}`))}, nil
}

// serveOne serves one request to g in process; hdr holds header names and
// values, alternately.
func serveOne(g *Gateway, method, auth, body string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	g.ServeHTTP(w, req)
	return w
}

// pingBatch returns a batch of n pings with ids 0 to n-1.
func pingBatch(n int) string {
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"ping"}`)
	}
	b.WriteString("]")
	return b.String()
}

// TestSessionFloodKeepsConfirmedBinding checks that a flood of session ids a
// caller made up never removes the binding of a session the downstream
// confirmed: after the viewer has presented maxSessions ids of its own
// invention (each answered 200 by a downstream that does not check them),
// its request on the admin's session is still refused with 404 and never
// forwarded.
func TestSessionFloodKeepsConfirmedBinding(t *testing.T) {
	rt := &countingTransport{}
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Transport: rt, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	// admin opens a session: the downstream's answer binds victim-sess to admin.
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`
	if w := serveOne(g, http.MethodPost, admin, init); w.Code != http.StatusOK || w.Header().Get("Mcp-Session-Id") != "victim-sess" {
		t.Fatalf("initialize: status %d session %q", w.Code, w.Header().Get("Mcp-Session-Id"))
	}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if w := serveOne(g, http.MethodPost, viewer, ping, "Mcp-Session-Id", "victim-sess"); w.Code != http.StatusNotFound {
		t.Fatalf("viewer on admin's session before the flood: status %d, want 404", w.Code)
	}
	// The viewer floods the table with session ids of its own invention.
	for i := range maxSessions {
		serveOne(g, http.MethodGet, viewer, "", "Mcp-Session-Id", "junk-"+strconv.Itoa(i))
	}
	before := rt.n.Load()
	w := serveOne(g, http.MethodPost, viewer, ping, "Mcp-Session-Id", "victim-sess")
	if w.Code != http.StatusNotFound || rt.n.Load() != before {
		t.Fatalf("after %d made-up session ids, the viewer's request on admin's live session got status %d and reached the downstream %d time(s); want 404 and 0 (the binding was evicted)",
			maxSessions, w.Code, rt.n.Load()-before)
	}
	// The admin's own session still works.
	if w := serveOne(g, http.MethodPost, admin, ping, "Mcp-Session-Id", "victim-sess"); w.Code != http.StatusOK {
		t.Errorf("admin on its own session after the flood: status %d, want 200", w.Code)
	}
}

// TestSessionUnknownIDDroppedOnRefusal checks that an unseen session id the
// downstream refuses (404: it does not know the session) stays bound to no
// one: another principal presenting it later is forwarded and gets the
// downstream's own answer, rather than the gateway's 404 for someone
// else's session.
func TestSessionUnknownIDDroppedOnRefusal(t *testing.T) {
	var hits atomic.Int64
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "session not found", http.StatusNotFound)
	}))
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for i, auth := range []string{viewer, admin} {
		w := serveOne(g, http.MethodGet, auth, "", "Mcp-Session-Id", "made-up")
		if w.Code != http.StatusNotFound || hits.Load() != int64(i+1) {
			t.Fatalf("GET %d on an unknown session: status %d, %d downstream requests; want the downstream's 404 and %d", i+1, w.Code, hits.Load(), i+1)
		}
	}
}

// TestArgumentScanLinear checks that reading a tools/call's arguments
// strictly (names equal under case folding make every field unreadable)
// takes time linear in their number: a call with 8n arguments takes about
// 8 times as long as one with n, where comparing every name with every
// other took about 64 times, so that one request under the 4 MiB body limit
// could pin a core for minutes.
func TestArgumentScanLinear(t *testing.T) {
	cfg := DefaultPolicyConfig()
	cfg.Tools = []policy.ToolRule{{Name: "trigger_refund", Class: policy.Read,
		ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 100}}}}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rt := &countingTransport{}
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Transport: rt, Logger: discardLogger(), Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	body := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"amount":5`)
		for i := range n {
			b.WriteString(`,"k` + strconv.Itoa(i) + `":0`)
		}
		b.WriteString(`}`)
		return call(`1`, "trigger_refund", b.String())
	}
	// timeOf measures the work of the request (testsvc.WorkTime: the CPU
	// time of its thread on Linux), not its wall time: on a busy machine a
	// request of 8n arguments waits for a CPU more often than one of n.
	timeOf := func(body string) time.Duration {
		return testsvc.WorkTime(func() {
			if w := serveOne(g, http.MethodPost, viewer, body); w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body.String())
			}
		})
	}
	const n = 750
	// The best of several runs of each, alternating, so that a collection
	// (or, with wall time, another process) during one run of one size
	// does not make the ratio: quadratic work gives about 64x in every run.
	sb, lb := body(n), body(8*n)
	small, large := time.Duration(1<<63-1), time.Duration(1<<63-1)
	for range 9 {
		small, large = min(small, timeOf(sb)), min(large, timeOf(lb))
	}
	ratio := float64(large) / float64(small)
	t.Logf("%d arguments: %v; %d arguments: %v (%.1fx)", n, small, 8*n, large, ratio)
	if ratio > 24 {
		t.Errorf("a tools/call with %d arguments took %v, with %d arguments %v: %.0fx for 8x the arguments (quadratic); at this rate a 4 MiB body would take about %v",
			n, small, 8*n, large, ratio, time.Duration(float64(large)*float64((4<<20)/len(body(8*n)))*float64((4<<20)/len(body(8*n)))))
	}
}

// TestBatchFanOutBounded checks that one batch has at most maxBatchInFlight
// members downstream at once: a batch of maxBatchMembers pings, each held
// by the downstream for a while, never has more requests in flight there,
// and every member is answered, in the client's order.
func TestBatchFanOutBounded(t *testing.T) {
	var cur, peak, conns atomic.Int64
	down := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n := cur.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
		cur.Add(-1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	down.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	down.Start()
	t.Cleanup(down.Close)
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	w := serveOne(g, http.MethodPost, viewer, pingBatch(maxBatchMembers))
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body.String())
	}
	if n := strings.Count(w.Body.String(), `"result"`); n != maxBatchMembers {
		t.Errorf("%d answers, want %d", n, maxBatchMembers)
	}
	if p := peak.Load(); p > maxBatchInFlight {
		t.Errorf("one batch request of %d members had %d requests in flight downstream at once over %d new connections; want at most %d",
			maxBatchMembers, p, conns.Load(), maxBatchInFlight)
	}
}

// TestBatchTooManyMembersRefused checks that a batch of more than
// maxBatchMembers messages is refused whole with -32600 and HTTP 400, and
// none of it reaches the downstream.
func TestBatchTooManyMembersRefused(t *testing.T) {
	rt := &countingTransport{}
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Transport: rt, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	w := serveOne(g, http.MethodPost, viewer, pingBatch(maxBatchMembers+1))
	if w.Code != http.StatusBadRequest {
		t.Fatalf("batch of %d members: status %d, want 400", maxBatchMembers+1, w.Code)
	}
	if _, code, _ := rpcErr(t, w.Body.String()); code != CodeInvalidRequest {
		t.Errorf("code %d, want %d", code, CodeInvalidRequest)
	}
	if n := rt.n.Load(); n != 0 {
		t.Errorf("the refused batch reached the downstream %d time(s)", n)
	}
}

// TestBatchStreamWithManyMembers checks the merged event stream of a batch
// larger than maxBatchInFlight, whose members the downstream answers some
// with JSON and some with an event stream: the response is one event
// stream that carries the local refusal and every member's answer once,
// those read before the first stream began included.
func TestBatchStreamWithManyMembers(t *testing.T) {
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m struct {
			ID int `json:"id"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answer := `{"jsonrpc":"2.0","id":` + strconv.Itoa(m.ID) + `,"result":{}}`
		if m.ID%3 != 2 {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, answer)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(10 * time.Millisecond)
		io.WriteString(w, "event: message\ndata: "+answer+"\n\n")
	}))
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3 * maxBatchInFlight
	batch := pingBatch(n)
	batch = batch[:len(batch)-1] + `,` + call(`"denied"`, "admin_reset_key", "") + `]`
	w := serveOne(g, http.MethodPost, viewer, batch)
	if ct := w.Header().Get("Content-Type"); w.Code != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q; want 200 and an event stream: %s", w.Code, ct, w.Body.String())
	}
	got := map[string]int{}
	for _, d := range clientSSEData(w.Body.String()) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("event data is not JSON: %q", d)
		}
		if m.Method == "" {
			got[string(m.ID)]++
		}
	}
	want := map[string]int{`"denied"`: 1}
	for i := range n {
		want[strconv.Itoa(i)] = 1
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers per id (-want +got):\n%s", diff)
	}
}
