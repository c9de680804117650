package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// tickerDownstream answers a tools/call of "ticker" with an event stream
// that sends a progress notification every 20 ms for as long as its request
// lasts, as a tool reporting progress does, and any other tools/call at
// once with a JSON result. started gets a value when a ticker stream
// begins, ended when one ends (the gateway closed or cancelled it).
type tickerDownstream struct {
	started, ended chan struct{}
}

func newTickerDownstream() *tickerDownstream {
	return &tickerDownstream{started: make(chan struct{}, 16), ended: make(chan struct{}, 16)}
}

func (d *tickerDownstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &msg)
	if msg.Params.Name != "ticker" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":{"content":[]}}`)
		return
	}
	defer func() { d.ended <- struct{}{} }()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	d.started <- struct{}{}
	for {
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestClientGoneEndlessAnswerBounded: a forwarded POST whose client hangs
// up is read on (6c1428a) so that it keeps its in-flight slot while the
// downstream works; but an answer that never ends (an event stream of
// progress notifications, each within Timeout of the last) was read
// forever: the gateway's goroutine, its downstream connection and the
// caller's in-flight slot stayed taken after the client had gone, and
// every hang-up added one more. Once its client has gone, the answer is
// read for at most Timeout more. Single calls and batch members (relayed as
// a stream, or collected for a JSON answer) alike.
func TestClientGoneEndlessAnswerBounded(t *testing.T) {
	for _, tc := range []struct{ name, body, accept string }{
		{"single", call(`1`, "ticker", `{}`), "application/json, text/event-stream"},
		{"batch_stream", "[" + call(`1`, "ticker", `{}`) + "]", "application/json, text/event-stream"},
		{"batch_json", "[" + call(`1`, "ticker", `{}`) + "]", "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newTickerDownstream()
			down := newServer(t, d)
			lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			sink := &memSink{}
			const timeout = 300 * time.Millisecond
			g, err := New(down.URL, DemoTokens(), &Options{Limiter: lim, Audit: sink, Logger: discardLogger(), Timeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			gw := newServer(t, g)
			// Run first on a failure: the gateway's handler, still reading,
			// would keep gw.Close waiting.
			t.Cleanup(down.CloseClientConnections)
			ctx, hangUp := context.WithCancel(context.Background())
			defer hangUp()
			done := make(chan struct{})
			go func() {
				defer close(done)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL+"/mcp", strings.NewReader(tc.body))
				req.Header.Set("Authorization", viewer)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", tc.accept)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
			select {
			case <-d.started:
			case <-time.After(10 * time.Second):
				t.Fatal("the call never reached the downstream")
			}
			time.Sleep(50 * time.Millisecond)
			hungUp := time.Now()
			hangUp()
			<-done
			select {
			case <-d.ended:
			case <-time.After(3 * time.Second):
				t.Fatalf("%v after its client hung up, the gateway still reads the downstream's endless answer (Timeout %v): the call holds its connection and in-flight slot", time.Since(hungUp).Round(time.Millisecond), timeout)
			}
			var evs []audit.Event
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if evs = sink.outcomes("ticker"); len(evs) > 0 {
					break
				}
			}
			if len(evs) != 1 || !strings.Contains(evs[0].Detail, "went away") {
				t.Errorf("outcome records:\n%s\nwant one, saying the client went away", outcomeSummary(evs))
			}
			// The in-flight slot is free again.
			got := postAs(t, gw.URL, viewer, call(`2`, "quick", `{}`))
			if got.status != http.StatusOK {
				t.Errorf("a call after the cut: %d %s; want 200", got.status, got.body)
			}
		})
	}
}

// postAs POSTs body to the gateway at base with auth.
func postAs(t *testing.T, base, auth, body string) reply {
	t.Helper()
	rg := &rig{url: base}
	return rg.post(t, auth, body)
}

// gatedDownstream answers every tools/call with a JSON result, the first
// hold of them only once release is closed; it counts the calls it got.
type gatedDownstream struct {
	hold    int64
	runs    atomic.Int64
	entered chan struct{} // a value per call held
	release chan struct{}
}

func (d *gatedDownstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &msg)
	if d.runs.Add(1) <= d.hold {
		d.entered <- struct{}{}
		<-d.release // a started call runs to completion, client or not
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":{"content":[]}}`)
}

// noticeGone wraps h: noticed is closed once the first request's context
// ends (the gateway has seen its client go).
func noticeGone(h http.Handler, noticed chan struct{}) http.Handler {
	var once sync.Once
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() {
			go func() { <-r.Context().Done(); close(noticed) }()
		})
		h.ServeHTTP(w, r)
	})
}

// TestClientGoneBeforeForwardNotSent: a call whose client has gone before
// the call was sent downstream is not sent (6c1428a sent it anyway, as the
// client's hang-up no longer cancelled the downstream request): the rest of
// a batch whose client hung up while its first 16 members ran downstream
// was forwarded, member after member, for nobody; and a single call whose
// client left while its write intent was recorded. Such a call is given
// back its limiter charge (nothing ran) and its outcome record says it was
// not forwarded because the client went away.
func TestClientGoneBeforeForwardNotSent(t *testing.T) {
	t.Run("batch_rest", func(t *testing.T) {
		const n = maxBatchInFlight + 2
		d := &gatedDownstream{hold: maxBatchInFlight, entered: make(chan struct{}, n), release: make(chan struct{})}
		var once sync.Once
		free := func() { once.Do(func() { close(d.release) }) }
		down := newServer(t, d)
		t.Cleanup(free)
		lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: n, Window: time.Hour}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		sink := &memSink{}
		g, err := New(down.URL, DemoTokens(), &Options{Limiter: lim, Audit: sink, Logger: discardLogger(), Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		noticed := make(chan struct{})
		gw := newServer(t, noticeGone(g, noticed))
		t.Cleanup(free)
		var members []string
		for i := range n {
			members = append(members, call(string(rune('1'+i%9)), "slow_write", `{}`))
		}
		ctx, hangUp := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL+"/mcp", strings.NewReader("["+strings.Join(members, ",")+"]"))
			req.Header.Set("Authorization", viewer)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		for range maxBatchInFlight {
			select {
			case <-d.entered:
			case <-time.After(10 * time.Second):
				t.Fatalf("only %d members reached the downstream", d.runs.Load())
			}
		}
		hangUp()
		<-done
		<-noticed
		free()
		evs := waitOutcomes(t, sink, "slow_write", n)
		if runs := d.runs.Load(); runs != maxBatchInFlight {
			t.Errorf("the downstream ran %d members; want %d: the rest of the batch was sent after its client had gone", runs, maxBatchInFlight)
		}
		var sent, unsent int
		for _, e := range evs {
			switch {
			case e.Allowed && e.Code == "":
				sent++
			case !e.Allowed && e.Code == "UPSTREAM_UNAVAILABLE" && strings.Contains(e.Detail, "not forwarded") && strings.Contains(e.Detail, "went away"):
				unsent++
			}
		}
		if sent != maxBatchInFlight || unsent != n-maxBatchInFlight {
			t.Errorf("outcome records: %d answered, %d not forwarded; want %d and %d\n%s", sent, unsent, maxBatchInFlight, n-maxBatchInFlight, outcomeSummary(evs))
		}
		// The members never sent were given back their charge.
		if got := postAs(t, gw.URL, viewer, call(`2`, "quick", `{}`)); got.status != http.StatusOK {
			t.Errorf("a call after the batch: %d %s; want 200 (the unsent members' charge given back)", got.status, got.body)
		}
	})
	t.Run("single_during_intent", func(t *testing.T) {
		d := &gatedDownstream{entered: make(chan struct{}, 4), release: make(chan struct{})}
		down := newServer(t, d)
		cfg := DefaultPolicyConfig()
		cfg.Tools = []policy.ToolRule{{Name: "slow_write", Class: policy.Write}}
		cfg.WriteAllowlist = []string{"slow_write"}
		pol, err := policy.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		sink := &intentGate{release: make(chan struct{})}
		g, err := New(down.URL, DemoTokens(), &Options{Policy: pol, Limiter: lim, Audit: sink, Logger: discardLogger(), Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		gw := newServer(t, g)
		ctx, hangUp := context.WithCancel(context.Background())
		done := make(chan string, 1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL+"/mcp", strings.NewReader(call(`1`, "slow_write", `{}`)))
			req.Header.Set("Authorization", viewer)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			done <- resp.Status + " " + string(b)
		}()
		for sink.waiting.Load() == 0 {
			select {
			case got := <-done:
				t.Fatalf("the call was answered before its intent was written: %s", got)
			case <-time.After(5 * time.Millisecond):
			}
		}
		hangUp()
		<-done
		// The intent is made once the disk answers, the client gone by
		// then (the gateway sees its connection close at once; the wait
		// leaves it time under -race on a busy machine).
		time.Sleep(200 * time.Millisecond)
		close(sink.release)
		evs := waitOutcomes(t, &sink.memSink, "slow_write", 1)
		if runs := d.runs.Load(); runs != 0 {
			t.Errorf("the downstream ran the call %d times; want 0: it was sent after its client had gone", runs)
		}
		if len(evs) != 1 || evs[0].Allowed || evs[0].Code != "UPSTREAM_UNAVAILABLE" || !strings.Contains(evs[0].Detail, "not forwarded") {
			t.Errorf("outcome records:\n%s\nwant one, not allowed, UPSTREAM_UNAVAILABLE, saying it was not forwarded", outcomeSummary(evs))
		}
		if got := postAs(t, gw.URL, viewer, call(`2`, "quick", `{}`)); got.status != http.StatusOK {
			t.Errorf("a call after: %d %s; want 200 (the unsent call's charge given back)", got.status, got.body)
		}
	})
}

// intentGate is a memSink whose write of an intent event waits until
// release is closed (a slow disk), then succeeds. The gateway writes an
// intent whether or not its client stays (within Timeout), so the client
// may go meanwhile.
type intentGate struct {
	memSink
	waiting atomic.Int64
	release chan struct{}
}

func (s *intentGate) Write(ctx context.Context, e *audit.Event) error {
	if e.Phase == audit.PhaseIntent {
		s.waiting.Add(1)
		select {
		case <-s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.memSink.Write(ctx, e)
}

// waitOutcomes waits up to 5 s for n outcome records of tool, then a little
// longer for one too many, and returns them.
func waitOutcomes(t *testing.T, sink *memSink, tool string, n int) []audit.Event {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(sink.outcomes(tool)) < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	return sink.outcomes(tool)
}

// outcomeSummary shows what a test checks of outcome records, one a line.
func outcomeSummary(evs []audit.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "  allowed=%v code=%q detail=%q\n", e.Allowed, e.Code, e.Detail)
	}
	return b.String()
}

// TestConnectionCutDetail: the outcome record said "the client went away"
// of every call whose answer could not be written to its client, also when
// the client stayed and the server cut the connection (its WriteTimeout
// here; the example binary's srv.Close at shutdown alike). The record says
// what the gateway knows: the client went away or its connection was
// closed.
func TestConnectionCutDetail(t *testing.T) {
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &msg)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond) // past the gateway server's WriteTimeout
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(50 * time.Millisecond)
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(msg.ID)+",\"result\":{\"content\":[]}}\n\n")
	}))
	sink := &memSink{}
	g, err := New(down.URL, DemoTokens(), &Options{Audit: sink, Logger: discardLogger(), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewUnstartedServer(g)
	gw.Config.WriteTimeout = 100 * time.Millisecond
	gw.Start()
	t.Cleanup(gw.Close)
	req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(call(`1`, "get_customer_record", `{}`)))
	req.Header.Set("Authorization", viewer)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req) // the client waits for its answer
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	evs := waitOutcomes(t, sink, "get_customer_record", 1)
	if len(evs) != 1 || evs[0].Detail == "the client went away before the answer was relayed" || !strings.Contains(evs[0].Detail, "connection") {
		t.Errorf("client still waiting (%v), server cut the connection; outcome records:\n%swant one whose detail does not blame the client alone", err, outcomeSummary(evs))
	}
}
