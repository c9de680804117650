package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview57WriteIntentBounded: a write's intent record was written with
// the request's context only, so a sink that stops answering without
// failing (a PostgreSQL server whose host froze) held the call for as long
// as its client waited, and forwarded it however late once the sink
// answered. Timeout bounds it now: 503 AUDIT_UNAVAILABLE, never forwarded.
func TestReview57WriteIntentBounded(t *testing.T) {
	pol := r57WritePolicy(t)
	answer := make(chan struct{})
	defer close(answer)
	sink := audit.SinkFunc(func(ctx context.Context, e *audit.Event) error {
		if e.Phase != audit.PhaseIntent {
			return nil
		}
		select {
		case <-answer:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	const bound = 300 * time.Millisecond
	rg := newRig(t, &Options{Policy: pol, Audit: sink, Timeout: bound})
	start := time.Now()
	got := rg.post(t, viewer, call(`1`, "trigger_refund", `{"amount":5}`))
	took := time.Since(start)
	if got.status != http.StatusServiceUnavailable {
		t.Fatalf("status %d after %v, want 503: %s", got.status, took, got.body)
	}
	if _, code, data := rpcErr(t, got.body); code != CodeInternal || data["code"] != "AUDIT_UNAVAILABLE" {
		t.Errorf("answer %s", got.body)
	}
	if took < bound || took > bound+10*time.Second {
		t.Errorf("answered after %v; want about %v", took, bound)
	}
	if n := len(rg.down.log()); n != 0 {
		t.Errorf("the write reached the downstream %d times without a durable intent", n)
	}
}

// TestReview57NeverSentGivesBack: a tools/call whose downstream refused the
// connection never reached it, yet kept its limiter charge: clients
// retrying through an outage used up their rate and spend caps on calls
// that never ran, and were refused 429 once the downstream was back. Such
// a call is given back its charge now, alone or in a batch, through the
// gateway's own client; its outcome record's cost is 0. Through net/http's
// Transport, which may send a written POST again (see
// TestReview57RefusedRetryKeepsCharge), it keeps it: the second call is
// refused 429.
func TestReview57NeverSentGivesBack(t *testing.T) {
	upstream := "http://" + refusingAddr(t) + "/mcp"
	for _, own := range []bool{true, false} {
		for _, batch := range []bool{false, true} {
			name := fmt.Sprintf("own client %v, batch %v", own, batch)
			t.Run(name, func(t *testing.T) {
				lim, err := limiter.New([]limiter.Limit{
					{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour},
					{Kind: limiter.Spend, Scope: limiter.User, Max: 1, Window: time.Hour},
				}, nil)
				if err != nil {
					t.Fatal(err)
				}
				var mu sync.Mutex
				var costs []float64
				opts := Options{Limiter: lim, Logger: discardLogger(), Cost: func(string, policy.Args) float64 { return 1 },
					Audit: audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
						mu.Lock()
						defer mu.Unlock()
						if e.Phase == audit.PhaseOutcome {
							costs = append(costs, e.Cost)
						}
						return nil
					})}
				if !own {
					opts.Transport = &http.Transport{}
				}
				g, err := New(upstream, DemoTokens(), &opts)
				if err != nil {
					t.Fatal(err)
				}
				gw := httptest.NewServer(g)
				defer gw.Close()
				for i := range 3 {
					body := call(strconv.Itoa(i), "get_customer_record", `{"q":"x"}`)
					if batch {
						body = "[" + body + "]"
					}
					got := r28Post(t, gw.URL, body, false)
					if !own && i > 0 {
						if !strings.Contains(got.body, "RATE_LIMIT") {
							t.Fatalf("call %d through net/http's Transport: %d %s; want RATE_LIMIT_EXCEEDED (the charge kept)", i, got.status, got.body)
						}
						continue
					}
					if strings.Contains(got.body, "RATE_LIMIT") || strings.Contains(got.body, "SPEND_LIMIT") || !strings.Contains(got.body, "UPSTREAM_UNAVAILABLE") {
						t.Fatalf("call %d with the downstream refusing connections: %d %s; want UPSTREAM_UNAVAILABLE", i, got.status, got.body)
					}
				}
				mu.Lock()
				defer mu.Unlock()
				want := "[0 0 0]" // each given back its cost of 1
				if !own {
					want = "[1 0 0]" // the first kept it; the others were refused before a charge
				}
				if fmt.Sprint(costs) != want {
					t.Errorf("outcome costs %v; want %s", costs, want)
				}
			})
		}
	}
}

// TestReview57RefusedRetryKeepsCharge: net/http's Transport sends a POST
// again on a new connection, after it was written on a kept one, when it
// carries an Idempotency-Key; a downstream that ran the call and went away
// then refuses that second connection, and the call, delivered, failed
// with a refused connection. Its charge was given back (a spend cap
// under-counted a write that ran): only the gateway's own client, which
// never sends a written POST again, gives a refused call its charge back.
// (Found by the session's final read.)
func TestReview57RefusedRetryKeepsCharge(t *testing.T) {
	var ran atomic.Int32
	var ts *httptest.Server
	ts = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(b), "tools/call") {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
			return
		}
		if ran.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
			return
		}
		// The tool ran; the process goes away before it answers.
		ts.Listener.Close()
		c, _, _ := w.(http.Hijacker).Hijack()
		c.Close()
	}))
	ts.Start()
	defer ts.Close()
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 2, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var costs []float64
	opts := Options{Limiter: lim, Cost: func(string, policy.Args) float64 { return 1 }, Logger: discardLogger(), Transport: NewTransport(),
		Audit: audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
			mu.Lock()
			defer mu.Unlock()
			if e.Phase == audit.PhaseOutcome {
				costs = append(costs, e.Cost)
			}
			return nil
		})}
	g, err := New(ts.URL+"/mcp", DemoTokens(), &opts)
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	defer gw.Close()
	for _, id := range []string{"1", "2"} {
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(call(id, "get_customer_record", `{"q":"x"}`)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", viewer)
		req.Header.Set("Idempotency-Key", "key-"+id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if ran.Load() != 2 || fmt.Sprint(costs) != "[1 1]" {
		t.Errorf("the downstream ran the tool %d times; outcome costs %v; want 2 and [1 1] (the second ran: its charge stays)", ran.Load(), costs)
	}
}

// TestReview57IntentOutlivesItsClient: the write's intent record was
// bounded by the request's context, so a client that went away while a
// durable sink made it cut the record short and the call was recorded as
// the trail's failure (AUDIT_UNAVAILABLE, an error logged) though the trail
// was fine. The record is made whole now, and the call, not sent for
// nobody, is recorded as its client's leaving. (Found by the session's
// final read.)
func TestReview57IntentOutlivesItsClient(t *testing.T) {
	pol := r57WritePolicy(t)
	var mu sync.Mutex
	var outcomes []string
	intentCut := make(chan error, 1)
	sink := audit.SinkFunc(func(ctx context.Context, e *audit.Event) error {
		if e.Phase == audit.PhaseIntent {
			select { // a slow disk
			case <-time.After(300 * time.Millisecond):
				intentCut <- nil
				return nil
			case <-ctx.Done():
				intentCut <- ctx.Err()
				return ctx.Err()
			}
		}
		mu.Lock()
		defer mu.Unlock()
		outcomes = append(outcomes, e.Code+"/"+e.Detail)
		return nil
	})
	rg := newRig(t, &Options{Policy: pol, Audit: sink})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rg.url+"/mcp", strings.NewReader(call(`1`, "trigger_refund", `{"amount":5}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", viewer)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	if err := <-intentCut; err != nil {
		t.Errorf("the intent record was cut short by the client's leaving: %v", err)
	}
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(outcomes)
		mu.Unlock()
		if n > 0 {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(outcomes) != 1 || strings.HasPrefix(outcomes[0], "AUDIT_UNAVAILABLE") {
		t.Errorf("outcome records %q; want one, not AUDIT_UNAVAILABLE", outcomes)
	}
	if n := len(rg.down.log()); n != 0 {
		t.Errorf("the call reached the downstream %d times after its client left", n)
	}
}

// r57SlowIntents is a sink whose intent records take d (a slow disk) or
// end with their context; it counts the intents begun after gone is set.
type r57SlowIntents struct {
	d         time.Duration
	gone      atomic.Bool
	afterGone atomic.Int32
	mu        sync.Mutex
	outcomes  []string
}

func (s *r57SlowIntents) Write(ctx context.Context, e *audit.Event) error {
	if e.Phase == audit.PhaseIntent {
		if s.gone.Load() {
			s.afterGone.Add(1)
		}
		select {
		case <-time.After(s.d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outcomes = append(s.outcomes, e.Code)
	return nil
}

// TestReview57NoIntentBegunForAGoneClient: with the intent outliving its
// client, a batch whose client had gone began a durable intent for each
// of its later write members, each up to Timeout, though none could be
// sent. An intent is begun only while the client is there now. (Found by
// the session's second final read.)
func TestReview57NoIntentBegunForAGoneClient(t *testing.T) {
	pol := r57WritePolicy(t)
	sink := &r57SlowIntents{d: 300 * time.Millisecond}
	rg := newRig(t, &Options{Policy: pol, Audit: audit.SinkFunc(sink.Write)})
	var members []string
	for i := range 5 {
		members = append(members, call(strconv.Itoa(i+1), "trigger_refund", `{"amount":5}`))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rg.url+"/mcp", strings.NewReader("["+strings.Join(members, ",")+"]"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", viewer)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	sink.gone.Store(true)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		sink.mu.Lock()
		n := len(sink.outcomes)
		sink.mu.Unlock()
		if n == 5 {
			break
		}
	}
	if n := sink.afterGone.Load(); n > 1 {
		t.Errorf("%d intents begun after the client had gone; want at most 1 (one begun as it left)", n)
	}
	if n := len(rg.down.log()); n != 0 {
		t.Errorf("%d calls forwarded after the client had gone", n)
	}
}

// TestReview57IntentKeepsTheRequestDeadline: the intent, no longer cut by
// the client's leaving, was not cut by the request's deadline either (an
// embedder's middleware, an http.TimeoutHandler): a client still waiting
// was answered only when the sink finished, past its deadline. The
// deadline bounds the intent again, and the call is answered -32003 with
// 504 as one its deadline left unsent. (Found by the session's second
// final read.)
func TestReview57IntentKeepsTheRequestDeadline(t *testing.T) {
	pol := r57WritePolicy(t)
	sink := &r57SlowIntents{d: 2 * time.Second}
	down := httptest.NewServer(&downstream{})
	defer down.Close()
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Policy: pol, Audit: audit.SinkFunc(sink.Write), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 100*time.Millisecond)
		defer cancel()
		g.ServeHTTP(w, r.WithContext(ctx))
	}))
	defer gw.Close()
	start := time.Now()
	got := postAs(t, gw.URL, viewer, call(`1`, "trigger_refund", `{"amount":5}`))
	if took := time.Since(start); took > time.Second || got.status != http.StatusGatewayTimeout || !strings.Contains(got.body, `"code":-32003`) {
		t.Errorf("a write whose deadline passed while its intent was made: %d %s after %v; want 504 -32003 at the deadline", got.status, got.body, took)
	}
}

// r57WritePolicy is the default policy with trigger_refund a write on the
// allowlist.
func r57WritePolicy(t *testing.T) *policy.Policy {
	t.Helper()
	cfg := DefaultPolicyConfig()
	cfg.Tools = []policy.ToolRule{{Name: "trigger_refund", Class: policy.Write}}
	cfg.WriteAllowlist = []string{"trigger_refund"}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}
