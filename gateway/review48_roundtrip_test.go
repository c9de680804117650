package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview48StreamSessionRefusals: a GET's or a DELETE's session is
// judged as a POST's is, before its decision is logged: more than one
// Mcp-Session-Id, an id no client could present, an id bound to another
// principal. Each is answered without reaching the downstream, logged as a
// denial with its reason and with no "allow" line (they were judged only
// in roundTrip, after the allow line; the first had no deny line at all),
// and recorded: the request's one audit record, without a tool.
func TestReview48StreamSessionRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, method, auth string
		ids                []string
		status             int
		code, reason       string
	}{
		{"two ids", http.MethodGet, viewer, []string{"sess-a", "sess-b"}, http.StatusBadRequest, "INVALID_REQUEST", `reason="more than one session id"`},
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
			allows := strings.Count(rg.logs.String(), "msg=allow")
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
			var denied bool
			for line := range strings.SplitSeq(rg.logs.String(), "\n") {
				if strings.Contains(line, "msg=deny") && strings.Contains(line, "outcome="+tc.code) && strings.Contains(line, tc.reason) {
					denied = true
				}
			}
			if !denied {
				t.Errorf("no deny line with outcome=%s and %s in the log:\n%s", tc.code, tc.reason, rg.logs.String())
			}
			if n := strings.Count(rg.logs.String(), "msg=allow") - allows; n != 0 {
				t.Errorf("the refused request has %d allow lines in the log, want none:\n%s", n, rg.logs.String())
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
	sink, gw := auditedGateway(t, dsrv.URL)
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
	// The viewer's record names the failure: a connection closed before
	// the answer's header, not one cut inside an answer.
	if evs := sink.outcomes("get_customer_record"); len(evs) != 2 || evs[0].Subject != "viewer" ||
		evs[0].Detail != "downstream closed the connection before answering" {
		t.Errorf("records:\n%s\nwant the viewer's first, saying the downstream closed the connection before answering", outcomeSummary(evs))
	}
}

// TestReview48RedirectFreesSession: a downstream's redirect is never relayed
// (502, logged with where it pointed); a POST that named a session id bound
// to no one drops the binding it made, as for any answer that is not a
// 2xx, and the call's connection is not left taken (its answer unread, it
// is closed).
func TestReview48RedirectFreesSession(t *testing.T) {
	d := &downstream{}
	var conns, closed atomic.Int64
	dsrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeaderSubject) == "viewer" {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Location", "/elsewhere/")
			w.WriteHeader(http.StatusTemporaryRedirect)
			io.WriteString(w, "moved")
			return
		}
		d.ServeHTTP(w, r)
	}))
	dsrv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			conns.Add(1)
		case http.StateClosed, http.StateHijacked:
			closed.Add(1)
		}
	}
	dsrv.Start()
	defer dsrv.Close()
	logs := &bytes.Buffer{}
	g, err := New(dsrv.URL+"/mcp", DemoTokens(), &Options{Logger: slog.New(slog.NewTextHandler(lockedWriter{new(sync.Mutex), logs}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	defer gw.Close()
	rg := &rig{url: gw.URL}
	body := call(`1`, "get_customer_record", `{}`)
	if got := rg.post(t, viewer, body, hdrSession, "fresh-session"); got.status != http.StatusBadGateway {
		t.Fatalf("viewer's call answered with a redirect: %d %s; want 502", got.status, got.body)
	}
	if l := logs.String(); !strings.Contains(l, "upstream redirect refused") || !strings.Contains(l, "status=307") || !strings.Contains(l, "/elsewhere/") {
		t.Errorf("the redirect is not logged with where it pointed:\n%s", logs.String())
	}
	if got := rg.post(t, admin, body, hdrSession, "fresh-session"); got.status != http.StatusOK {
		t.Errorf("another principal's call on the id after it: %d %s; want 200 (the redirected call left the id bound)", got.status, got.body)
	}
	// The redirect's connection, its answer unread, is closed (or reused),
	// not left taken.
	for deadline := time.Now().Add(5 * time.Second); conns.Load() != 1 && closed.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections to the downstream, none closed: the redirect's is still taken", conns.Load())
		}
	}
}

// TestReview48GoneClientsCallFails: a POST's call goes on downstream after
// its client has gone; when the downstream then fails it (closes the
// connection before answering), its record says so, not merely that the
// client went away.
func TestReview48GoneClientsCallFails(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	evs := hangUpOn(t, entered, release, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		close(entered)
		<-release
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			c.Close()
		}
	})
	if len(evs) != 1 || !strings.Contains(evs[0].Detail, "downstream closed the connection before answering") {
		t.Errorf("records:\n%s\nwant one, saying the downstream closed the connection before answering", outcomeSummary(evs))
	}
}

// hangUpOn sends viewer's tools/call of get_customer_record to a gateway
// in front of down, with an audit sink; hangs up once reached is closed
// (down closes it), waits a little for the gateway to see its client
// gone, closes release and returns the call's outcome records, once there
// are any (or after 5 s).
func hangUpOn(t *testing.T, reached, release chan struct{}, down http.HandlerFunc) []audit.Event {
	t.Helper()
	dsrv := httptest.NewServer(down)
	defer dsrv.Close()
	defer dsrv.CloseClientConnections()
	sink, gw := auditedGateway(t, dsrv.URL)
	defer gw.Close()
	ctx, hangUp := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL+"/mcp", strings.NewReader(call(`1`, "get_customer_record", `{}`)))
		req.Header.Set("Authorization", viewer)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-reached:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the call never reached the downstream")
	}
	hangUp()
	<-done
	time.Sleep(50 * time.Millisecond) // the gateway sees its client gone
	close(release)
	var evs []audit.Event
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if evs = sink.outcomes("get_customer_record"); len(evs) > 0 {
			break
		}
	}
	return evs
}

// TestReview48CutCountsFromHeader: a POST's call whose client has gone is
// read for one timeout after the client was last seen, and a client is
// seen when the answer's header arrives too: one that hangs up on the
// header of an answer whose first event comes late is still read for a
// timeout from that header, not cut at the first read, as though it had
// never been seen (a timeout from the call's start, long past).
func TestReview48CutCountsFromHeader(t *testing.T) {
	const timeout = 600 * time.Millisecond
	header, ended := make(chan time.Time, 1), make(chan time.Time, 1)
	dsrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(timeout * 5 / 6)
		sent := time.Now() // before the gateway can have the header
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		header <- sent
		defer func() { ended <- time.Now() }()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(timeout * 2 / 3):
		}
		for {
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(timeout / 12):
			}
		}
	}))
	defer dsrv.Close()
	defer dsrv.CloseClientConnections()
	g, err := New(dsrv.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	defer gw.Close()
	req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(call(`1`, "ticker", `{}`)))
	req.Header.Set("Authorization", viewer)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // hangs up on the header
	sent := <-header
	select {
	case end := <-ended:
		// The cut comes a timeout after the gateway had the header, which
		// was after sent: never sooner, whatever the machine's load.
		if d := end.Sub(sent); d < timeout*11/12 {
			t.Errorf("the answer was cut %v after its header, want at least the timeout (%v) after it", d.Round(time.Millisecond), timeout)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the answer was never cut after its client hung up")
	}
}

// TestReview48PinsCheckEvery2xx: with pins, a listing in the answer to a
// tools/call, of any 2xx status, is checked, up to 299, the last of them: a downstream (or
// whatever answers in its place) cannot pass a changed definition by
// answering with an unusual success status.
func TestReview48PinsCheckEvery2xx(t *testing.T) {
	for _, status := range []int{http.StatusOK, http.StatusCreated, http.StatusPartialContent, 299} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			pins, err := ParsePins([]byte(`{"get_customer_record":"` + ToolDigest(json.RawMessage(goodTool)) + `"}`))
			if err != nil {
				t.Fatal(err)
			}
			down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				io.WriteString(w, rugListing("7"))
			}))
			g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Pins: pins, Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			gw := newServer(t, g)
			// A tools/call's answer: a tools/list's goes through the
			// listing's own path.
			got := (&rig{url: gw.URL}).post(t, admin, call(`7`, "get_customer_record", `{}`))
			if strings.Contains(got.body, "id_rsa") {
				t.Errorf("the changed definition reached the client: %d %s", got.status, got.body)
			}
		})
	}
}

// TestReview48KnownLengthKept: a POST's answer of known length is relayed
// with its Content-Length, also past what net/http's server buffers (it
// sets the length itself of an answer that fits in its buffer, and
// chunks a longer one): a client then sees an answer cut short as short.
// An event stream is relayed as it comes, without one.
func TestReview48KnownLengthKept(t *testing.T) {
	pad := strings.Repeat("x", 8<<10)
	for _, tc := range []struct {
		name, ctype, body string
		want              int64
	}{
		{"json", "application/json", `{"jsonrpc":"2.0","id":1,"result":{"pad":"` + pad + `"}}`, 0},
		{"event stream", "text/event-stream", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"pad\":\"" + pad + "\"}}\n\n", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == 0 {
				tc.want = int64(len(tc.body))
			}
			down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", tc.ctype)
				w.Header().Set("Content-Length", strconv.Itoa(len(tc.body)))
				io.WriteString(w, tc.body)
			}))
			g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			gw := newServer(t, g)
			got := (&rig{url: gw.URL}).post(t, viewer, call(`1`, "get_customer_record", `{}`))
			if got.status != http.StatusOK || got.body != tc.body {
				t.Fatalf("%d, %d bytes; want 200 and the downstream's %d", got.status, len(got.body), len(tc.body))
			}
			cl := int64(-1)
			if v := got.header.Get("Content-Length"); v != "" {
				cl, _ = strconv.ParseInt(v, 10, 64)
			}
			if cl != tc.want {
				t.Errorf("Content-Length %d (-1: none), want %d", cl, tc.want)
			}
		})
	}
}

// TestReview48GoneClientsAnswerCut: a POST's answer is read on after its
// client has gone; when the downstream then cuts it, the call's record
// says so (the connection closed before the answer's end), besides that
// the client went away.
func TestReview48GoneClientsAnswerCut(t *testing.T) {
	first, release := make(chan struct{}), make(chan struct{})
	evs := hangUpOn(t, first, release, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "1000")
		io.WriteString(w, `{"jsonrpc"`)
		w.(http.Flusher).Flush()
		close(first)
		<-release
		io.WriteString(w, `:"2.0","id`)
		w.(http.Flusher).Flush()
		time.Sleep(50 * time.Millisecond)
		panic(http.ErrAbortHandler) // the connection breaks inside the answer
	})
	if len(evs) != 1 || !strings.Contains(evs[0].Detail, "before the answer's end") || !strings.Contains(evs[0].Detail, "client went away") {
		t.Errorf("records:\n%s\nwant one, saying the downstream cut its answer and the client went away", outcomeSummary(evs))
	}
}

// TestReview48RoundTripJudgesSessionItself: every request's session is
// judged before it reaches roundTrip (checkSession), but roundTrip judges
// it again where it binds it, and refuses, unsent and logged, a request
// with more than one Mcp-Session-Id, an invalid id, or an id bound to
// another principal since: a caller that skipped the first check still
// sends nothing downstream.
func TestReview48RoundTripJudgesSessionItself(t *testing.T) {
	d := &downstream{}
	dsrv := httptest.NewServer(d)
	defer dsrv.Close()
	logs := &bytes.Buffer{}
	g, err := New(dsrv.URL+"/mcp", DemoTokens(), &Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	g.sessions.bind("sess-other", "someone-else")
	pr := &policy.Principal{Subject: "viewer", Roles: []string{"viewer"}}
	for _, tc := range []struct {
		name   string
		ids    []string
		status int
		reason string
	}{
		{"two ids", []string{"sess-a", "sess-b"}, http.StatusBadRequest, `reason="more than one session id"`},
		{"invalid id", []string{"bad id"}, http.StatusBadRequest, `reason="invalid session id"`},
		{"another's id", []string{"sess-other"}, http.StatusNotFound, `reason="session owned by another principal or no room"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs.Reset()
			r := httptest.NewRequest(http.MethodGet, "/mcp", nil)
			c, e := g.roundTrip(r, pr, "cid-1", http.MethodGet, http.Header{hdrSession: tc.ids}, nil, nil, false)
			if c != nil {
				c.close()
				t.Fatal("sent")
			}
			if e == nil || e.status != tc.status || !e.unsent {
				t.Errorf("refusal %+v, want status %d, unsent", e, tc.status)
			}
			if l := logs.String(); !strings.Contains(l, "msg=deny") || !strings.Contains(l, tc.reason) {
				t.Errorf("log %q, want a deny line with %s", l, tc.reason)
			}
		})
	}
	if n := len(d.log()); n != 0 {
		t.Errorf("the downstream received %d requests", n)
	}
}

// auditedGateway serves a gateway with the demo tokens and an audit sink
// in front of the downstream at down; the caller closes the server.
func auditedGateway(t *testing.T, down string) (*memSink, *httptest.Server) {
	t.Helper()
	sink := &memSink{}
	g, err := New(down+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), Audit: sink})
	if err != nil {
		t.Fatal(err)
	}
	return sink, httptest.NewServer(g)
}
