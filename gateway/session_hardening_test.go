package gateway

import (
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

const (
	initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`
	pingBody = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
)

// TestLocalRefusalBindsNoSession checks doc.go's contract for an id the
// gateway has not seen: it "is held for the principal whose request
// carrying it is sent downstream, until the downstream answers", and "A
// request the gateway refuses itself holds nothing": it leaves the id bound
// to no one. Here the viewer's refused request carries the id of a session opened
// before a restart; the session's real owner (admin) is then forwarded, not
// answered 404 by the gateway.
func TestLocalRefusalBindsNoSession(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		hdr  []string
	}{
		{name: "denied_call", body: call(`1`, "admin_reset_key", "")},
		{name: "denied_notification", body: `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"admin_reset_key"}}`},
		{name: "batch_of_refusals", body: `[` + call(`1`, "admin_reset_key", "") + `,{"jsonrpc":"2.0","id":2,"method":7}]`},
		{name: "mcp_method_header_mismatch", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, hdr: []string{"Mcp-Method", "tools/list"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rg := newRig(t, nil)
			hdr := append([]string{"Mcp-Session-Id", "pre-restart"}, tc.hdr...)
			rg.post(t, viewer, tc.body, hdr...)
			if n := len(rg.down.log()); n != 0 {
				t.Fatalf("setup: viewer's refused request reached the downstream %d time(s)", n)
			}
			r := rg.post(t, admin, pingBody, "Mcp-Session-Id", "pre-restart")
			if r.status != http.StatusOK || len(rg.down.log()) != 1 {
				t.Errorf("admin on its own pre-restart session after the viewer's locally refused request (%s) carrying its id: status %d, %d downstream request(s); want 200 and 1: the refused request, never answered by the downstream, left the id held by the viewer: %s",
					tc.name, r.status, len(rg.down.log()), r.body)
			}
		})
	}
}

// holdingTransport is a downstream that holds its first request until
// release is closed, and answers every request with 200. It counts the
// requests it receives and reports the first on arrived.
type holdingTransport struct {
	n       atomic.Int64
	arrived chan struct{}
	release chan struct{}
}

func (rt *holdingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
	}
	if rt.n.Add(1) == 1 {
		close(rt.arrived)
		<-rt.release
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":2,"result":{}}`))}, nil
}

// TestConcurrentFirstUseForwardsOne checks that of two principals using an
// unseen session id at the same time only the first is forwarded: the
// viewer's request holds the id while the downstream has not answered it,
// so the admin's is refused with 404 and never reaches the downstream, and
// the downstream's 2xx to the viewer leaves the id the viewer's.
func TestConcurrentFirstUseForwardsOne(t *testing.T) {
	rt := &holdingTransport{arrived: make(chan struct{}), release: make(chan struct{})}
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Transport: rt, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var first int
	wg.Go(func() {
		first = serveOne(g, http.MethodPost, viewer, pingBody, "Mcp-Session-Id", "pre-restart").Code
	})
	<-rt.arrived
	w := serveOne(g, http.MethodPost, admin, pingBody, "Mcp-Session-Id", "pre-restart")
	close(rt.release)
	wg.Wait()
	if first != http.StatusOK {
		t.Fatalf("viewer's first use of an unseen session id: status %d, want 200", first)
	}
	if w.Code != http.StatusNotFound || rt.n.Load() != 1 {
		t.Errorf("admin's use of the same id while the viewer's request was in flight: status %d, %d downstream request(s) in all; want 404 and 1", w.Code, rt.n.Load())
	}
	if w := serveOne(g, http.MethodPost, admin, pingBody, "Mcp-Session-Id", "pre-restart"); w.Code != http.StatusNotFound || rt.n.Load() != 1 {
		t.Errorf("admin on the id after the downstream's 2xx to the viewer: status %d, %d downstream request(s) in all; want 404 and 1", w.Code, rt.n.Load())
	}
}

// issuingTransport is an in-process downstream that behaves like a stateful
// MCP server: an initialize gets a new session id, a request carrying an id
// it issued (and not deleted) gets 200, any other id 404. It records the
// subject the gateway named on every request for each session id.
type issuingTransport struct {
	mu       sync.Mutex
	next     int
	live     map[string]bool
	subjects map[string][]string // session id -> X-Mcp-Gateway-Subject of each request
}

func (rt *issuingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var b []byte
	if r.Body != nil {
		b, _ = io.ReadAll(r.Body)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.live == nil {
		rt.live, rt.subjects = map[string]bool{}, map[string][]string{}
	}
	h := http.Header{"Content-Type": {"application/json"}}
	status := http.StatusOK
	body := `{"jsonrpc":"2.0","id":1,"result":{}}`
	switch sid := r.Header.Get("Mcp-Session-Id"); {
	case sid == "" && strings.Contains(string(b), `"initialize"`):
		rt.next++
		id := "s-" + strconv.Itoa(rt.next)
		rt.live[id] = true
		h.Set("Mcp-Session-Id", id)
	case rt.live[sid]:
		rt.subjects[sid] = append(rt.subjects[sid], r.Header.Get(HeaderSubject))
		if r.Method == http.MethodDelete {
			delete(rt.live, sid)
		}
	default:
		status, body = http.StatusNotFound, "session not found"
		h.Set("Content-Type", "text/plain")
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}, nil
}

// servedTo returns the subjects the downstream served on session id.
func (rt *issuingTransport) servedTo(id string) []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return slices.Clone(rt.subjects[id])
}

// newIssuingGateway returns a gateway with the demo tokens in front of a
// new issuingTransport.
func newIssuingGateway(t *testing.T) (*Gateway, *issuingTransport) {
	t.Helper()
	rt := &issuingTransport{}
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Transport: rt, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return g, rt
}

// initialize opens a session for auth and returns its id.
func initialize(t *testing.T, g *Gateway, auth string) string {
	t.Helper()
	w := serveOne(g, http.MethodPost, auth, initBody)
	id := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || id == "" {
		t.Fatalf("initialize: status %d session %q", w.Code, id)
	}
	return id
}

// bindMany binds n made-up session ids named prefix-0, prefix-1, ... to
// subjects, maxSessionsPerSubject to each, as the downstream's 2xx answers
// naming them would: it opens n sessions without n round trips, which
// -race makes slow.
func bindMany(g *Gateway, prefix string, n int) {
	for i := range n {
		g.sessions.bind(prefix+"-"+strconv.Itoa(i), prefix+"-"+strconv.Itoa(i/maxSessionsPerSubject))
	}
}

// TestDisplacedSessionNotClaimable checks that a live session whose
// binding was displaced does not become anyone's for the asking: the admin
// opens session s-1, whose binding then makes room for a newer session of
// the admin's (past the admin's share, or in a table other principals
// filled). s-1 is still alive downstream: the viewer presenting it is
// refused with 404 and never forwarded, also after one principal's flood of
// sessions, while the admin itself is still served on it.
func TestDisplacedSessionNotClaimable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		displace func(t *testing.T, g *Gateway)
	}{
		{name: "past_own_share", displace: func(t *testing.T, g *Gateway) {
			for range maxSessionsPerSubject {
				initialize(t, g, admin)
			}
		}},
		{name: "in_a_full_table", displace: func(t *testing.T, g *Gateway) {
			// The viewer holds a session of its own, so the full table
			// does not refuse it for want of room.
			initialize(t, g, viewer)
			bindMany(g, "filler", maxSessions-2)
			initialize(t, g, admin)
		}},
		{name: "after_a_flood_of_tombstones", displace: func(t *testing.T, g *Gateway) {
			for range maxSessionsPerSubject {
				initialize(t, g, admin)
			}
			// One principal's sessions, past its share, leave more
			// tombstones than the table holds.
			for i := range maxTombstones + 2*maxSessionsPerSubject {
				g.sessions.bind("flood-"+strconv.Itoa(i), "viewer")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, rt := newIssuingGateway(t)
			victim := initialize(t, g, admin)
			if w := serveOne(g, http.MethodPost, viewer, pingBody, "Mcp-Session-Id", victim); w.Code != http.StatusNotFound {
				t.Fatalf("setup: viewer on the admin's session: status %d, want 404", w.Code)
			}
			tc.displace(t, g)
			w := serveOne(g, http.MethodPost, viewer, pingBody, "Mcp-Session-Id", victim)
			if got := rt.servedTo(victim); w.Code != http.StatusNotFound || slices.Contains(got, "viewer") {
				t.Errorf("after the admin's live session %s was displaced, the viewer presenting it got status %d and the downstream served it to subjects %q; want 404 and never the viewer",
					victim, w.Code, got)
			}
			if w := serveOne(g, http.MethodPost, admin, pingBody, "Mcp-Session-Id", victim); w.Code != http.StatusOK {
				t.Errorf("admin on its own displaced live session %s: status %d, want 200", victim, w.Code)
			}
			if w := serveOne(g, http.MethodPost, viewer, pingBody, "Mcp-Session-Id", victim); w.Code != http.StatusNotFound {
				t.Errorf("viewer on the admin's session after the admin used it again: status %d, want 404", w.Code)
			}
		})
	}
}

// TestDeleteLeavesNoTombstone checks that a session its owner ended with a
// DELETE the downstream answered 2xx leaves neither binding nor tombstone,
// whether it was bound or displaced: another principal presenting the id
// later is forwarded and gets the downstream's own 404.
func TestDeleteLeavesNoTombstone(t *testing.T) {
	for _, displaced := range []bool{false, true} {
		t.Run("displaced_"+strconv.FormatBool(displaced), func(t *testing.T) {
			g, rt := newIssuingGateway(t)
			id := initialize(t, g, admin)
			if displaced {
				for range maxSessionsPerSubject {
					initialize(t, g, admin)
				}
			}
			if w := serveOne(g, http.MethodDelete, admin, "", "Mcp-Session-Id", id); w.Code != http.StatusOK {
				t.Fatalf("admin's DELETE of its session %s: status %d, want 200", id, w.Code)
			}
			if _, ok := g.sessions.tombs[id]; ok {
				t.Errorf("a tombstone of %s remains after its owner's DELETE", id)
			}
			w := serveOne(g, http.MethodPost, viewer, pingBody, "Mcp-Session-Id", id)
			if w.Code != http.StatusNotFound || w.Body.String() != "session not found" {
				t.Errorf("viewer on the ended session %s: status %d body %q; want the downstream's 404 %q", id, w.Code, w.Body.String(), "session not found")
			}
			if got := rt.servedTo(id); !slices.Equal(got, []string{"admin"}) {
				t.Errorf("downstream served session %s to %q, want only the admin's DELETE", id, got)
			}
		})
	}
}

// TestOnePrincipalCannotLockOutOthers checks that one principal cannot deny
// every other principal the use of the gateway: after the viewer opened as
// many sessions as the whole table holds (never deleted; bindings do not
// expire), the viewer holds only its share, and both a new principal's and
// the viewer's own new sessions are served.
func TestOnePrincipalCannotLockOutOthers(t *testing.T) {
	g, _ := newIssuingGateway(t)
	for i := range maxSessions {
		g.sessions.bind("viewer-"+strconv.Itoa(i), "viewer")
	}
	for _, auth := range []string{viewer, admin} {
		sid := initialize(t, g, auth)
		if w := serveOne(g, http.MethodPost, auth, pingBody, "Mcp-Session-Id", sid); w.Code != http.StatusOK {
			t.Errorf("%s on the session the downstream just opened for it, after the viewer opened %d sessions: status %d, want 200 (the gateway answered %q)",
				auth, maxSessions, w.Code, w.Body.String())
		}
	}
	if n := g.sessions.held["viewer"].n; n > maxSessionsPerSubject {
		t.Errorf("the viewer holds %d confirmed bindings, want at most %d", n, maxSessionsPerSubject)
	}
}

// TestSessionTombstonesBounded checks that tombstones stay within each
// subject's share and the table's bound, and that their queues do not grow
// with the number of displaced bindings.
func TestSessionTombstonesBounded(t *testing.T) {
	s := newSessions()
	subjects := maxTombstones/maxSessionsPerSubject + 2
	for i := range 3 * maxSessionsPerSubject * subjects {
		s.bind("sess-"+strconv.Itoa(i), "u-"+strconv.Itoa(i%subjects))
	}
	if n := len(s.tombs); n > maxTombstones {
		t.Errorf("%d tombstones, want at most %d", n, maxTombstones)
	}
	for subject, h := range s.buried {
		if h.n > maxSessionsPerSubject {
			t.Errorf("subject %s has %d tombstones, want at most %d", subject, h.n, maxSessionsPerSubject)
		}
		if got := len(h.fifo) - h.head; got > 2*maxSessionsPerSubject+64 {
			t.Errorf("subject %s's tombstone queue holds %d slots, want at most %d", subject, got, 2*maxSessionsPerSubject+64)
		}
	}
	if got := len(s.graves.fifo) - s.graves.head; got > 2*maxTombstones+64 {
		t.Errorf("tombstone queue holds %d slots, want at most %d", got, 2*maxTombstones+64)
	}
}
