package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview23gDeadlineUnsentIsAnswered: a request whose context ended at a
// deadline (an embedder's middleware, an http.TimeoutHandler's), or whose
// deadline passed though its context does not say so yet, before it was
// sent downstream is not sent, but its client is answered: a deadline is
// not the client's hanging up (net/http cancels the context then), and the
// client may still be waiting. The gateway wrote nothing, taking it for a
// client gone, and net/http answered 200 with an empty body: a tools/call
// "succeeded" with no JSON-RPC response (an http.TimeoutHandler whose
// select saw the handler done first relays that too, instead of its 503).
// A request whose client did hang up (its context cancelled) is still
// answered nothing.
func TestReview23gDeadlineUnsentIsAnswered(t *testing.T) {
	d := &downstream{}
	dsrv := httptest.NewServer(d)
	t.Cleanup(dsrv.Close)
	sink := &memSink{}
	g, err := New(dsrv.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), Audit: sink})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ctx  func(context.Context) (context.Context, context.CancelFunc)
	}{
		{"deadline passed, not yet done", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return ctxerrPassed{ctx}, func() {}
		}},
		{"deadline exceeded", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithDeadline(ctx, time.Now().Add(-time.Second))
		}},
	} {
		gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := tc.ctx(r.Context())
			defer cancel()
			g.ServeHTTP(w, r.WithContext(ctx))
		}))
		rg := &rig{url: gw.URL, down: d}
		got := rg.post(t, admin, call(`7`, "get_customer_record", `{"id":"c1"}`))
		gw.Close()
		if got.status != http.StatusGatewayTimeout || !strings.Contains(got.body, `"id":7`) || !strings.Contains(got.body, "-32003") {
			t.Errorf("%s: %d %q; want 504 and a -32003 error answering id 7", tc.name, got.status, got.body)
		}
		if b := d.bodies(); len(b) != 0 {
			t.Errorf("%s: sent downstream: %q", tc.name, b)
		}
	}
	evs := sink.outcomes("get_customer_record")
	if len(evs) != 2 {
		t.Fatalf("records %+v; want 2", evs)
	}
	for _, e := range evs {
		if e.Allowed || e.Cost != 0 || e.Code != "UPSTREAM_UNAVAILABLE" {
			t.Errorf("record %+v; want refused UPSTREAM_UNAVAILABLE, cost 0", e)
		}
	}

	// A GET that the deadline ended is answered so too.
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithDeadline(r.Context(), time.Now().Add(-time.Second))
		defer cancel()
		g.ServeHTTP(w, r.WithContext(ctx))
	}))
	defer gw.Close()
	greq, err := http.NewRequest(http.MethodGet, gw.URL+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	greq.Header.Set("Authorization", admin)
	greq.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(greq)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Errorf("GET: %d; want 504", resp.StatusCode)
	}

	// A client that hung up is answered nothing, as before.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", strings.NewReader(call(`8`, "get_customer_record", `{"id":"c1"}`)))
	req.Header.Set("Authorization", admin)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	if rec.Body.Len() != 0 || rec.Header().Get("Content-Type") != "" {
		t.Errorf("cancelled: wrote %d %q; want nothing", rec.Code, rec.Body.String())
	}
}

// TestReview23gLimiterRefusalOfGoneClient: a tools/call whose request's
// context ended (its client hung up, or its deadline passed, marked done
// or not yet) before the limiter decided is refused by a store-backed
// limiter without asking its store (limiter.ErrStoreUnavailable, whatever
// the fail-open options), and its record says the client went away, as the
// guard's does (TestReview23eLimiterPassedDeadlineIsClientGone). It said
// "Limiter unavailable", though the store was healthy: a false alarm on
// every client that left during the decision. A live call is admitted.
func TestReview23gLimiterRefusalOfGoneClient(t *testing.T) {
	store := limiter.StoreFunc(func(_ context.Context, _ time.Time, b *limiter.Batch) error {
		b.Denied = -1 // healthy: admits every call
		return nil
	})
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour}},
		&limiter.Options{Store: store, FailOpenReads: true, FailOpenWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	d := &downstream{}
	dsrv := httptest.NewServer(d)
	t.Cleanup(dsrv.Close)
	sink := &memSink{}
	g, err := New(dsrv.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), Audit: sink, Limiter: lim})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, ctx := range []context.Context{cancelled, expired, ctxerrPassed{context.Background()}} {
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", strings.NewReader(call(`1`, "get_customer_record", `{"id":"c1"}`)))
		req.Header.Set("Authorization", admin)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		g.ServeHTTP(httptest.NewRecorder(), req)
	}
	evs := sink.outcomes("get_customer_record")
	if len(evs) != 3 {
		t.Fatalf("records %+v; want 3", evs)
	}
	for i, e := range evs {
		if e.Allowed || !strings.Contains(e.Detail, "client went away") || strings.Contains(e.Detail, "Limiter unavailable") {
			t.Errorf("record %d: allowed %v, detail %q; want refused, the client's leaving", i, e.Allowed, e.Detail)
		}
	}
	if b := d.bodies(); len(b) != 0 {
		t.Errorf("sent downstream: %q", b)
	}
	gw := httptest.NewServer(g)
	defer gw.Close()
	rg := &rig{url: gw.URL, down: d}
	if got := rg.post(t, admin, call(`2`, "get_customer_record", `{"id":"c1"}`)); got.status != http.StatusOK {
		t.Errorf("live call: %d %.200s; want 200", got.status, got.body)
	}
}
