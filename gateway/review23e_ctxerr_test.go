package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// ctxerrPassed is a context at the instant its deadline has passed but its
// timer has not yet marked it done: Err is still nil.
type ctxerrPassed struct{ context.Context }

func (ctxerrPassed) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// TestReview23ePostPastDeadlineNotSent: a tools/call whose request
// context's deadline has passed (a deadline the server's middleware set,
// an http.TimeoutHandler's, that answers the client once its timer fires)
// is not sent downstream, though the context does not say so yet: as for a
// client gone, nobody waits for its answer, and a write sent then runs
// downstream while the client is told it timed out. It was sent (detached
// from the client, as a POST is), and the call charged.
func TestReview23ePostPastDeadlineNotSent(t *testing.T) {
	d := &downstream{}
	dsrv := httptest.NewServer(d)
	t.Cleanup(dsrv.Close)
	sink := &memSink{}
	g, err := New(dsrv.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), Audit: sink})
	if err != nil {
		t.Fatal(err)
	}
	var late atomic.Bool
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if late.Load() {
			r = r.WithContext(ctxerrPassed{r.Context()})
		}
		g.ServeHTTP(w, r)
	}))
	t.Cleanup(gw.Close)
	rg := &rig{url: gw.URL, down: d}
	late.Store(true)
	rg.post(t, admin, call(`1`, "get_customer_record", `{"id":"c1"}`))
	if got := d.bodies(); len(got) != 0 {
		t.Errorf("sent downstream past the client's deadline: %q", got)
	}
	evs := sink.outcomes("get_customer_record")
	if len(evs) != 1 || evs[0].Detail != clientGoneUnsent || evs[0].Cost != 0 {
		t.Errorf("records %+v; want one, detail %q, cost 0", evs, clientGoneUnsent)
	}
	// A live request is sent.
	late.Store(false)
	if got := rg.post(t, admin, call(`2`, "get_customer_record", `{"id":"c1"}`)); got.status != http.StatusOK || len(d.bodies()) != 1 {
		t.Errorf("live request: %d %.200s, %d sent; want 200, 1 sent", got.status, got.body, len(d.bodies()))
	}
}
