package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview48StreamSessionRefusals: a GET or a DELETE is not checked for
// its session before it reaches roundTrip (a POST is, by checkSession), so
// roundTrip's own refusals are a GET's and a DELETE's only ones: more than
// one Mcp-Session-Id, an id no client could present, an id bound to
// another principal. Each is answered without reaching the downstream,
// logged as a denial with its reason, and recorded: the request's one
// audit record, without a tool.
func TestReview48StreamSessionRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, method, auth string
		ids                []string
		status             int
		code, reason       string // reason "" when roundTrip logs no line of its own
	}{
		{"two ids", http.MethodGet, viewer, []string{"sess-a", "sess-b"}, http.StatusBadRequest, "INVALID_REQUEST", ""},
		{"invalid id", http.MethodGet, viewer, []string{"bad id"}, http.StatusBadRequest, "INVALID_REQUEST", `reason="invalid session id"`},
		{"invalid id, delete", http.MethodDelete, viewer, []string{"sess-\u00e9"}, http.StatusBadRequest, "INVALID_REQUEST", `reason="invalid session id"`},
		{"another's session", http.MethodGet, admin, []string{"sess-1"}, http.StatusNotFound, "FORBIDDEN", `reason="session owned by another principal or no room"`},
		{"another's session, delete", http.MethodDelete, admin, []string{"sess-1"}, http.StatusNotFound, "FORBIDDEN", `reason="session owned by another principal or no room"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{}
			rg := newRig(t, &Options{Audit: sink})
			// The downstream names session sess-1 in its answer to a
			// POST: it is bound to viewer.
			if got := rg.post(t, viewer, call(`1`, "get_customer_record", `{}`)); got.status != http.StatusOK {
				t.Fatalf("viewer's call: %d %s", got.status, got.body)
			}
			before := len(rg.down.log())
			sink.mu.Lock()
			sink.evs = nil
			sink.mu.Unlock()
			req, err := http.NewRequest(tc.method, rg.url+"/mcp", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", tc.auth)
			req.Header.Set("Accept", "text/event-stream")
			req.Header[hdrSession] = tc.ids
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if got := rg.down.log()[before:]; len(got) != 0 {
				t.Errorf("the downstream received %d requests: %+v", len(got), got)
			}
			sink.mu.Lock()
			evs := append([]audit.Event(nil), sink.evs...)
			sink.mu.Unlock()
			if len(evs) != 1 || evs[0].Phase != audit.PhaseOutcome || evs[0].Allowed || evs[0].Code != tc.code || evs[0].Tool != "" {
				t.Errorf("records:\n%s\nwant one outcome, refused %s, without a tool", outcomeSummary(evs), tc.code)
			}
			if tc.reason == "" {
				return
			}
			var denied bool
			for line := range strings.SplitSeq(rg.logs.String(), "\n") {
				if strings.Contains(line, "msg=deny") && strings.Contains(line, "outcome="+tc.code) && strings.Contains(line, tc.reason) {
					denied = true
				}
			}
			if !denied {
				t.Errorf("no deny line with outcome=%s and %s in the log:\n%s", tc.code, tc.reason, rg.logs.String())
			}
		})
	}
}

// TestReview48GoneBeforeSentFreesSession: a POST that names a session id
// bound to no one binds it to its caller, unconfirmed, just before it is
// sent; one whose client went away by then is not sent, and that binding
// must go with it. Kept, or confirmed, it gave the id to a caller the
// downstream never answered, and every other principal's use of it was
// refused.
func TestReview48GoneBeforeSentFreesSession(t *testing.T) {
	d := &downstream{}
	dsrv := httptest.NewServer(d)
	defer dsrv.Close()
	g, err := New(dsrv.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(ctx context.Context, auth string) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", strings.NewReader(call(`1`, "get_customer_record", `{}`)))
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(hdrSession, "fresh-session")
		w := httptest.NewRecorder()
		g.ServeHTTP(w, req)
		return w
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	serve(gone, viewer)
	if n := len(d.log()); n != 0 {
		t.Fatalf("a call whose client had gone reached the downstream (%d requests)", n)
	}
	if w := serve(context.Background(), admin); w.Code != http.StatusOK {
		t.Errorf("another principal's call on the id after it: %d %s; want 200 (the unsent call left the id bound)", w.Code, w.Body)
	}
	if n := len(d.log()); n != 1 {
		t.Errorf("the downstream received %d requests, want 1", n)
	}
}

// TestReview48FailedCallFreesSession: a POST that names a session id bound
// to no one, sent but never answered (the downstream broke the
// connection), drops the binding it made: the id goes to no one, and
// another principal may use it. Kept, it gave the id to a caller the
// downstream never answered.
func TestReview48FailedCallFreesSession(t *testing.T) {
	d := &downstream{}
	dsrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeaderSubject) == "viewer" {
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				c.Close()
			}
			return
		}
		d.ServeHTTP(w, r)
	}))
	defer dsrv.Close()
	g, err := New(dsrv.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	defer gw.Close()
	body := call(`1`, "get_customer_record", `{}`)
	if got := (&rig{url: gw.URL}).post(t, viewer, body, hdrSession, "fresh-session"); got.status != http.StatusBadGateway {
		t.Fatalf("viewer's call to a downstream that hangs up: %d %s; want 502", got.status, got.body)
	}
	if got := (&rig{url: gw.URL}).post(t, admin, body, hdrSession, "fresh-session"); got.status != http.StatusOK {
		t.Errorf("another principal's call on the id after it: %d %s; want 200 (the failed call left the id bound)", got.status, got.body)
	}
	if n := len(d.log()); n != 1 {
		t.Errorf("the downstream answered %d requests, want 1", n)
	}
}
