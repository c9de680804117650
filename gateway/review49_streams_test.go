package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/corrid"
)

// TestReview49ResumedFrom checks how a GET's Last-Event-ID is read back to
// the downstream's event id: the gateway's own part (streamWaitPrefix and a
// correlation id) is taken off; any other id, one as long as the
// gateway's part or one that only begins like it, is the downstream's as
// it stands.
func TestReview49ResumedFrom(t *testing.T) {
	cid := strings.Repeat("c", corrid.Len)
	long := strings.Repeat("e", len(streamWaitPrefix)+corrid.Len+5)
	for _, tc := range []struct{ v, want string }{
		{"", ""},
		{"ev-7", "ev-7"},
		{long, long},
		{streamWaitPrefix + cid, ""},
		{streamWaitPrefix + cid + "ev-7", "ev-7"},
		{streamWaitPrefix + "short", streamWaitPrefix + "short"},
		{streamWaitPrefix, streamWaitPrefix},
	} {
		if got := resumedFrom(tc.v); got != tc.want {
			t.Errorf("resumedFrom(%q) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// TestReview49StreamCountNoCap checks streamCount's zero value, its cap 0:
// no cap, nothing counted.
func TestReview49StreamCountNoCap(t *testing.T) {
	var s streamCount
	for range 100 {
		if !s.acquire("a") {
			t.Fatal("a stream count without a cap refused a stream")
		}
	}
	s.release("a")
	if s.open != nil {
		t.Errorf("a stream count without a cap counted %v", s.open)
	}
}

// TestReview49StreamAllowLogged checks that a stream the gateway lets
// through, a GET's or a subscriptions/listen's, has its decision logged as
// an allow line naming its principal and method, as every forwarded
// request's is.
func TestReview49StreamAllowLogged(t *testing.T) {
	var logs lockedLog
	_, base := r27Gateway(t, r49Hold, Options{}, &logs)
	for _, tc := range []struct {
		listen bool
		method string
	}{{false, "GET"}, {true, "subscriptions/listen"}} {
		s := r27Open(t, base, viewer, tc.listen)
		if s.status != http.StatusOK {
			t.Fatalf("%s: status %d, want 200", tc.method, s.status)
		}
		s.close()
		found := false
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "msg=allow") && strings.Contains(line, "method="+tc.method) && strings.Contains(line, "subject=") {
				found = true
			}
		}
		if !found {
			t.Errorf("no allow line for the %s stream let through:\n%s", tc.method, logs.String())
		}
	}
}

// TestReview49ListenDoesNotMarkSession checks that only a GET marks its
// session as streamed (so that a later GET of it past the cap reconnects a
// stream, [Gateway.refuseStream]): a subscriptions/listen on the session
// does not, and neither does a GET without a session.
func TestReview49ListenDoesNotMarkSession(t *testing.T) {
	g, base := r27Gateway(t, r49Hold, Options{}, nil)
	g.sessions.bind("s-1", "viewer")
	s := r27Open(t, base, viewer, true, "Mcp-Session-Id", "s-1")
	if s.status != http.StatusOK {
		t.Fatalf("listen: status %d, want 200", s.status)
	}
	s.close()
	if g.sessions.streamed("s-1", "viewer") {
		t.Error("a subscriptions/listen on session s-1 marked it as streamed")
	}
	s = r27Open(t, base, viewer, false)
	if s.status != http.StatusOK {
		t.Fatalf("GET: status %d, want 200", s.status)
	}
	s.close()
	g.sessions.mu.Lock()
	_, bound := g.sessions.owner[""]
	g.sessions.mu.Unlock()
	if bound || g.sessions.streamed("s-1", "viewer") {
		t.Error("a GET without a session marked a session")
	}
	s = r27Open(t, base, viewer, false, "Mcp-Session-Id", "s-1")
	if s.status != http.StatusOK {
		t.Fatalf("GET on s-1: status %d, want 200", s.status)
	}
	s.close()
	if !g.sessions.streamed("s-1", "viewer") {
		t.Error("a GET on session s-1 did not mark it as streamed")
	}
}

// TestReview49WaitStreamAnswer checks the answer to a GET that reconnects
// past Options.MaxStreams: an event stream (its type and no-cache said),
// ending at once with a comment giving the reason, an event id of the
// gateway's carrying the id the GET resumed from, and a retry of 5 s; its
// refusal recorded once, not allowed, at no cost.
func TestReview49WaitStreamAnswer(t *testing.T) {
	sink := &memSink{}
	_, base := r27Gateway(t, r49Hold, Options{MaxStreams: 1, Audit: sink}, nil)
	held := r27Open(t, base, viewer, false)
	defer held.close()
	if held.status != http.StatusOK {
		t.Fatalf("first GET: status %d", held.status)
	}
	resp := (&rig{url: base}).send(t, http.MethodGet, "", "Last-Event-ID", "ev-7")
	if resp.status != http.StatusOK || resp.header.Get("Content-Type") != "text/event-stream" || resp.header.Get("Cache-Control") != "no-cache" {
		t.Errorf("reconnecting GET past the cap: status %d, Content-Type %q, Cache-Control %q; want 200, text/event-stream, no-cache",
			resp.status, resp.header.Get("Content-Type"), resp.header.Get("Cache-Control"))
	}
	b := resp.body
	if !strings.HasPrefix(b, ": Too many requests: open stream limit exceeded") || !strings.Contains(b, "\nid: "+streamWaitPrefix) ||
		!strings.Contains(b, "ev-7\nretry: 5000\n\n") {
		t.Errorf("reconnecting GET past the cap answered %q", b)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	var refusals int
	for _, e := range sink.evs {
		if e.Code == "CONCURRENCY_LIMIT_EXCEEDED" {
			refusals++
			if e.Allowed || e.Cost != 0 || e.Phase != "outcome" {
				t.Errorf("the refusal's record %+v, want an outcome, not allowed, cost 0", e)
			}
		}
	}
	if refusals != 1 {
		t.Errorf("%d records of the refusal, want 1: %+v", refusals, sink.evs)
	}
}

// r49Hold is a downstream that answers every request with an event stream
// held open until its client leaves.
var r49Hold = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	<-r.Context().Done()
})
