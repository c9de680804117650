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

// deadlineServer serves g behind a middleware whose deadline has passed
// (fired, or passed and not yet marked done: ctxerrPassed).
func deadlineServer(t *testing.T, g *Gateway, fired bool) *httptest.Server {
	t.Helper()
	return newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ctx context.Context = ctxerrPassed{r.Context()}
		if fired {
			c, cancel := context.WithDeadline(r.Context(), time.Now().Add(-time.Second))
			defer cancel()
			ctx = c
		}
		g.ServeHTTP(w, r.WithContext(ctx))
	}))
}

// TestReview23hFilteredListDeadlineIsAnswered: a single tools/list that
// FilterToolsList filters, whose request's deadline passed before it was
// sent, is answered -32003 with 504 and its id, as a tools/call is
// (TestReview23gDeadlineUnsentIsAnswered): forwardFiltered wrote nothing
// for any errClientGone, so net/http answered 200 with an empty body, a
// listing with no JSON-RPC response. A DELETE that a fired deadline ended
// is answered 504 too.
func TestReview23hFilteredListDeadlineIsAnswered(t *testing.T) {
	d := &downstream{}
	dsrv := newServer(t, d)
	g, err := New(dsrv.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), FilterToolsList: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, fired := range []bool{false, true} {
		rg := &rig{url: deadlineServer(t, g, fired).URL, down: d}
		got := rg.post(t, viewer, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)
		if got.status != http.StatusGatewayTimeout || !strings.Contains(got.body, `"id":9`) || !strings.Contains(got.body, "-32003") {
			t.Errorf("fired %v: %d %q; want 504 and a -32003 error answering id 9", fired, got.status, got.body)
		}
		if b := d.bodies(); len(b) != 0 {
			t.Errorf("fired %v: sent downstream: %q", fired, b)
		}
	}

	req, err := http.NewRequest(http.MethodDelete, deadlineServer(t, g, true).URL+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Errorf("DELETE: %d; want 504", resp.StatusCode)
	}
}

// TestReview23hBatchDeadlineAnswersAsSingle: the members of a batch whose
// deadline passed before they were sent are answered each as a single
// request is (errDeadlinePassed's message), not as though their client had
// gone ("client went away"), while the client is there to read it; each
// has one record, refused, cost 0.
func TestReview23hBatchDeadlineAnswersAsSingle(t *testing.T) {
	d := &downstream{}
	dsrv := newServer(t, d)
	sink := &memSink{}
	g, err := New(dsrv.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), Audit: sink, FilterToolsList: true})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{url: deadlineServer(t, g, false).URL, down: d}
	got := rg.post(t, admin, `[`+call(`1`, "get_customer_record", `{"id":"c1"}`)+`,{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`)
	if got.status != http.StatusOK || strings.Count(got.body, "-32003") != 2 ||
		strings.Contains(got.body, "client went away") || strings.Count(got.body, "timed out") != 2 {
		t.Errorf("%d %q; want both members answered -32003 as timed out", got.status, got.body)
	}
	if b := d.bodies(); len(b) != 0 {
		t.Errorf("sent downstream: %q", b)
	}
	evs := sink.outcomes("get_customer_record")
	if len(evs) != 1 || evs[0].Allowed || evs[0].Cost != 0 || evs[0].Code != "UPSTREAM_UNAVAILABLE" {
		t.Errorf("records %+v; want one, refused UPSTREAM_UNAVAILABLE, cost 0", evs)
	}
}

// TestReview23hLimiterDeadlineIsAnswered: a tools/call whose request's
// deadline passed before a store-backed limiter decided is refused by the
// limiter without asking its store; its client, which may still be waiting,
// was answered 503 "Limiter unavailable" with Retry-After, though the store
// was healthy. It is answered as a call left unsent by its deadline is: 504,
// -32003, its id, and its record says so (refused, cost 0).
func TestReview23hLimiterDeadlineIsAnswered(t *testing.T) {
	store := limiter.StoreFunc(func(_ context.Context, _ time.Time, b *limiter.Batch) error {
		b.Denied = -1
		return nil
	})
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour}},
		&limiter.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	d := &downstream{}
	dsrv := newServer(t, d)
	sink := &memSink{}
	g, err := New(dsrv.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), Audit: sink, Limiter: lim})
	if err != nil {
		t.Fatal(err)
	}
	for _, fired := range []bool{false, true} {
		rg := &rig{url: deadlineServer(t, g, fired).URL, down: d}
		got := rg.post(t, admin, call(`5`, "get_customer_record", `{"id":"c1"}`))
		if got.status != http.StatusGatewayTimeout || !strings.Contains(got.body, `"id":5`) || !strings.Contains(got.body, "-32003") ||
			strings.Contains(got.body, "Limiter unavailable") {
			t.Errorf("fired %v: %d %q; want 504 and a -32003 error answering id 5", fired, got.status, got.body)
		}
	}
	evs := sink.outcomes("get_customer_record")
	if len(evs) != 2 {
		t.Fatalf("records %+v; want 2", evs)
	}
	for _, e := range evs {
		if e.Allowed || e.Cost != 0 || e.Code != "UPSTREAM_UNAVAILABLE" || !strings.Contains(e.Detail, "client went away") {
			t.Errorf("record %+v; want refused UPSTREAM_UNAVAILABLE, cost 0, the client's leaving", e)
		}
	}
	if b := d.bodies(); len(b) != 0 {
		t.Errorf("sent downstream: %q", b)
	}
}
