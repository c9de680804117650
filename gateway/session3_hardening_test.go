package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/policy"
)

// parkingTransport is a downstream for the session tests. A request
// carrying X-Test-Hold is held until release is closed (and reported on
// held); a GET is answered 405 (a server without a standalone stream, or
// go-sdk's 409 for a second one); anything else 200. It records, per
// session id, the subject of every request it answered 2xx.
type parkingTransport struct {
	mu       sync.Mutex
	held     chan string
	release  chan struct{}
	subjects map[string][]string
}

func newParkingTransport() *parkingTransport {
	return &parkingTransport{held: make(chan string, 2*maxPendingSessions), release: make(chan struct{}), subjects: map[string][]string{}}
}

func (rt *parkingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if r.Header.Get("X-Test-Hold") != "" {
		rt.held <- sid
		select {
		case <-rt.release:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	if r.Method == http.MethodGet {
		return &http.Response{StatusCode: http.StatusMethodNotAllowed, Header: http.Header{"Content-Type": {"text/plain"}, "Allow": {"POST"}},
			Body: io.NopCloser(strings.NewReader("Method Not Allowed"))}, nil
	}
	rt.mu.Lock()
	rt.subjects[sid] = append(rt.subjects[sid], r.Header.Get(HeaderSubject))
	rt.mu.Unlock()
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":2,"result":{}}`))}, nil
}

// servedTo returns the subjects the downstream served on session id.
func (rt *parkingTransport) servedTo(id string) []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return slices.Clone(rt.subjects[id])
}

// awaitHeld waits for n requests to reach rt's hold.
func awaitHeld(t *testing.T, rt *parkingTransport, n int) {
	t.Helper()
	for i := range n {
		select {
		case <-rt.held:
		case <-time.After(30 * time.Second):
			t.Fatalf("setup: %d of %d held requests reached the downstream", i, n)
		}
	}
}

// subjectTokens authenticates the bearer token "u-N" as subject u-N, and
// the demo tokens as [DemoTokens] does.
func subjectTokens() Authenticator {
	demo := DemoTokens()
	return AuthenticatorFunc(func(ctx context.Context, tok string) (*policy.Principal, error) {
		if strings.HasPrefix(tok, "u-") {
			return &policy.Principal{Subject: tok, Roles: []string{"viewer"}}, nil
		}
		return demo.Authenticate(ctx, tok)
	})
}

// TestSiblingFailureKeepsHold checks that a hold on an unseen session id
// lasts while any request of its subject on it is downstream. After a
// gateway restart the admin's client uses its live session "pre-restart"
// with two requests at once: a slow POST, and a GET for the standalone
// stream, which the downstream refuses (405; go-sdk answers 409 to a second
// GET). The viewer's request on the session, made after that refusal while
// the POST is still downstream, is refused (404) and never forwarded, and
// the POST's 2xx binds the session to the admin.
func TestSiblingFailureKeepsHold(t *testing.T) {
	rt := newParkingTransport()
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Transport: rt, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	const sid = "pre-restart"
	var wg sync.WaitGroup
	var slow int
	wg.Go(func() {
		slow = serveOne(g, http.MethodPost, admin, pingBody, "Mcp-Session-Id", sid, "X-Test-Hold", "1").Code
	})
	awaitHeld(t, rt, 1)
	if w := serveOne(g, http.MethodGet, admin, "", "Mcp-Session-Id", sid); w.Code != http.StatusMethodNotAllowed {
		t.Fatalf("setup: admin's GET: status %d, want the downstream's 405", w.Code)
	}
	w := serveOne(g, http.MethodPost, viewer, pingBody, "Mcp-Session-Id", sid)
	close(rt.release)
	wg.Wait()
	if slow != http.StatusOK {
		t.Fatalf("setup: admin's slow POST: status %d, want 200", slow)
	}
	if w.Code != http.StatusNotFound || slices.Contains(rt.servedTo(sid), "viewer") {
		t.Errorf("viewer on %s while the admin's POST on it was downstream (after the admin's GET got 405): status %d, downstream served %q; want 404 and never the viewer",
			sid, w.Code, rt.servedTo(sid))
	}
	if w := serveOne(g, http.MethodPost, admin, pingBody, "Mcp-Session-Id", sid); w.Code != http.StatusOK {
		t.Errorf("admin on its own session %s afterwards: status %d, want 200 (the session is bound to %q)",
			sid, w.Code, g.sessions.owner[sid].subject)
	}
}

// TestSiblingFailureKeepsHoldTable is TestSiblingFailureKeepsHold on the
// table alone (also the case of one batch, whose members are separate
// downstream requests): of the admin's two requests on an unseen id, one is
// answered with a failure while the other is still downstream; the hold
// lasts until the second is answered too.
func TestSiblingFailureKeepsHoldTable(t *testing.T) {
	s := newSessions()
	if first, second := s.admit("x", "admin"), s.admit("x", "admin"); !first || !second {
		t.Fatal("setup: admin's two requests on an unseen id not admitted")
	}
	s.settle("x", "admin", false)
	if s.admit("x", "viewer") {
		t.Errorf("viewer admitted on x while one of the admin's requests on it is still downstream")
	}
	s.settle("x", "admin", false)
	if !s.admit("x", "viewer") {
		t.Errorf("viewer refused on x after the admin's requests on it were all refused downstream")
	}
}

// TestHoldOutlivesEndedBinding checks that a request admitted on a
// confirmed binding counts towards a later hold of the same id: the
// admin's first request is downstream when its session is ended (a DELETE)
// and held again by a second request; the first one's failure leaves the
// hold, which the second one still needs.
func TestHoldOutlivesEndedBinding(t *testing.T) {
	s := newSessions()
	s.bind("x", "admin")
	if !s.admit("x", "admin") {
		t.Fatal("setup: admin refused on its own session")
	}
	s.admit("x", "admin") // the DELETE
	s.end("x", "admin")
	if !s.admit("x", "admin") {
		t.Fatal("setup: admin refused on its ended session")
	}
	s.settle("x", "admin", false) // the first request
	if s.admit("x", "viewer") {
		t.Errorf("viewer admitted on x while the admin's second request on it is still downstream")
	}
}

// TestPendingHoldsNeverEvicted checks that the table of unconfirmed
// bindings, every one of which has a request downstream, drops none to make
// room: when it is full a request on another unseen id is refused, as is
// one past its subject's share, and an answer makes room again.
func TestPendingHoldsNeverEvicted(t *testing.T) {
	s := newSessions()
	if !s.admit("pre-restart", "admin") {
		t.Fatal("setup: admin refused on an unseen id")
	}
	for i := range maxPendingPerSubject {
		if !s.admit("own-"+strconv.Itoa(i), "admin") != (i == maxPendingPerSubject-1) {
			t.Fatalf("admin's unseen id %d of a share of %d: admitted %v", i+2, maxPendingPerSubject, i < maxPendingPerSubject-1)
		}
	}
	if !s.allows("pre-restart", "admin") || s.allows("another", "admin") {
		t.Errorf("with its share of holds full, the admin: allowed on its hold %v (want true), on another unseen id %v (want false)",
			s.allows("pre-restart", "admin"), s.allows("another", "admin"))
	}
	for i := 0; s.pending < maxPendingSessions; i++ {
		if !s.admit("junk-"+strconv.Itoa(i), "u-"+strconv.Itoa(i/maxPendingPerSubject)) {
			t.Fatalf("junk %d refused with %d of %d holds", i, s.pending, maxPendingSessions)
		}
	}
	if s.admit("fresh", "newcomer") {
		t.Errorf("a request on an unseen id admitted with the table of %d holds full", maxPendingSessions)
	}
	if s.admit("pre-restart", "viewer") || s.owner["pre-restart"].subject != "admin" {
		t.Errorf("the admin's hold was dropped while its request was downstream: binding %+v", s.owner["pre-restart"])
	}
	s.settle("junk-0", "u-0", false)
	if !s.admit("fresh", "newcomer") {
		t.Errorf("a request on an unseen id refused after an answer made room")
	}
	s.settle("pre-restart", "admin", true)
	if b := s.owner["pre-restart"]; b.subject != "admin" || !b.confirmed {
		t.Errorf("after the admin's 2xx, pre-restart is bound to %+v, want the admin, confirmed", b)
	}
}

// TestPendingHoldSurvivesFlood checks the same end to end: the admin's slow
// request on its pre-restart session holds the id while principals fill
// the table of unconfirmed bindings with requests on made-up ids; the next
// made-up id is refused (404), and so is the viewer's request on the
// admin's session, which the admin's 2xx then binds to the admin.
func TestPendingHoldSurvivesFlood(t *testing.T) {
	rt := newParkingTransport()
	g, err := New("http://127.0.0.1:1/mcp", subjectTokens(), &Options{Transport: rt, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	const sid = "pre-restart"
	var wg sync.WaitGroup
	defer wg.Wait()
	released := false
	release := func() {
		if !released {
			released = true
			close(rt.release)
		}
	}
	defer release()
	wg.Go(func() { serveOne(g, http.MethodPost, admin, pingBody, "Mcp-Session-Id", sid, "X-Test-Hold", "1") })
	awaitHeld(t, rt, 1)
	for i := range maxPendingSessions - 1 {
		wg.Go(func() {
			serveOne(g, http.MethodPost, "Bearer u-"+strconv.Itoa(i/maxPendingPerSubject), pingBody,
				"Mcp-Session-Id", "junk-"+strconv.Itoa(i), "X-Test-Hold", "1")
		})
	}
	awaitHeld(t, rt, maxPendingSessions-1)
	if w := serveOne(g, http.MethodPost, "Bearer u-newcomer", pingBody, "Mcp-Session-Id", "junk-new"); w.Code != http.StatusNotFound {
		t.Errorf("a made-up id with the table of %d holds full: status %d, want 404", maxPendingSessions, w.Code)
	}
	w := serveOne(g, http.MethodPost, viewer, pingBody, "Mcp-Session-Id", sid)
	release()
	wg.Wait()
	if w.Code != http.StatusNotFound || slices.Contains(rt.servedTo(sid), "viewer") {
		t.Errorf("viewer on %s while the admin's request on it was downstream (the table of holds full): status %d, downstream served %q; want 404 and never the viewer",
			sid, w.Code, rt.servedTo(sid))
	}
	if b := g.sessions.owner[sid]; b.subject != "admin" || !b.confirmed {
		t.Errorf("after the admin's 2xx, %s is bound to %+v, want the admin, confirmed", sid, b)
	}
}

// TestFullTableInitializeSessionNotClaimable checks that a session the
// downstream opens for a principal holding none in a full table where no
// one holds more than one (its initialize carries no id, so it is
// forwarded) is not anyone's for the asking once room is made: the viewer
// presenting it is refused (404) and never forwarded, while the admin,
// whose session it is, is served and bound to it.
func TestFullTableInitializeSessionNotClaimable(t *testing.T) {
	g, rt := newIssuingGateway(t)
	for i := range maxSessions {
		id := "filler-" + strconv.Itoa(i)
		g.sessions.bind(id, id) // one session per subject: no fair share to take
	}
	w := serveOne(g, http.MethodPost, admin, initBody)
	sid := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || sid == "" {
		t.Fatalf("setup: admin's initialize in a full table: status %d session %q", w.Code, sid)
	}
	if w := serveOne(g, http.MethodPost, admin, pingBody, "Mcp-Session-Id", sid); w.Code != http.StatusNotFound {
		t.Errorf("admin on its session in the still full table: status %d, want 404", w.Code)
	}
	g.sessions.forget("filler-0") // a filler's DELETE makes room
	w = serveOne(g, http.MethodPost, viewer, pingBody, "Mcp-Session-Id", sid)
	if got := rt.servedTo(sid); w.Code != http.StatusNotFound || slices.Contains(got, "viewer") {
		t.Errorf("viewer on the session %s the downstream opened for the admin (in a full table): status %d, downstream served it to %q; want 404 and never the viewer",
			sid, w.Code, got)
	}
	if w := serveOne(g, http.MethodPost, admin, pingBody, "Mcp-Session-Id", sid); w.Code != http.StatusOK {
		t.Errorf("admin on its session once room was made: status %d, want 200", w.Code)
	}
	if b := g.sessions.owner[sid]; b.subject != "admin" || !b.confirmed {
		t.Errorf("%s is bound to %+v, want the admin, confirmed", sid, b)
	}
}

// checkSessionInvariants checks the counters and queues of s against its
// maps, and the requests in flight against want, the number of requests of
// each subject on each id that the model has downstream.
func checkSessionInvariants(t *testing.T, s *sessions, want map[use]int, step int) {
	t.Helper()
	if !maps.Equal(s.inflight, want) {
		t.Fatalf("step %d: requests counted in flight %v, want %v", step, s.inflight, want)
	}
	pending, pendingBy, confirmed := 0, map[string]int{}, map[string]int{}
	for id, b := range s.owner {
		if !b.confirmed {
			pending++
			pendingBy[b.subject]++
			if s.inflight[use{id, b.subject}] == 0 {
				t.Fatalf("step %d: %s is held for %s, who has no request on it downstream", step, id, b.subject)
			}
			continue
		}
		confirmed[b.subject]++
		if _, ok := s.tombs[id]; ok {
			t.Fatalf("step %d: %s is both bound (confirmed) and buried", step, id)
		}
	}
	if pending != s.pending || pending > maxPendingSessions || !maps.Equal(pendingBy, s.pendingBy) {
		t.Fatalf("step %d: pending counters %d %v, unconfirmed bindings %d %v (max %d)", step, s.pending, s.pendingBy, pending, pendingBy, maxPendingSessions)
	}
	for sub, n := range pendingBy {
		if n > maxPendingPerSubject {
			t.Fatalf("step %d: subject %s holds %d unseen ids, share %d", step, sub, n, maxPendingPerSubject)
		}
	}
	total := 0
	for sub, n := range confirmed {
		total += n
		if h := s.held[sub]; h == nil || h.n != n || n > maxSessionsPerSubject {
			t.Fatalf("step %d: subject %s has %d confirmed bindings, holding %+v", step, sub, n, h)
		}
	}
	if total > maxSessions {
		t.Fatalf("step %d: %d confirmed bindings", step, total)
	}
	ranked := 0
	for k, r := range s.ranks {
		ranked += len(r)
		if len(r) > 0 && k > s.top {
			t.Fatalf("step %d: a holding of %d bindings above the top rank %d", step, k, s.top)
		}
	}
	if ranked != len(s.held) {
		t.Fatalf("step %d: %d holdings ranked, %d held", step, ranked, len(s.held))
	}
	for sub, h := range s.held {
		if confirmed[sub] == 0 || h.n <= 0 {
			t.Fatalf("step %d: empty holding of %s (n=%d)", step, sub, h.n)
		}
		if r := s.ranks[h.n]; h.place >= len(r) || r[h.place] != h {
			t.Fatalf("step %d: %s's holding of %d is not at its place %d in its rank", step, sub, h.n, h.place)
		}
		if got := len(h.fifo) - h.head; got > 2*maxSessionsPerSubject+65 {
			t.Fatalf("step %d: %s's queue has %d slots for %d bindings", step, sub, got, h.n)
		}
	}
	buried := map[string]int{}
	for _, b := range s.tombs {
		buried[b.subject]++
	}
	if len(s.tombs) > maxTombstones {
		t.Fatalf("step %d: %d tombstones", step, len(s.tombs))
	}
	for sub, n := range buried {
		if h := s.buried[sub]; h == nil || h.n != n || n > maxSessionsPerSubject {
			t.Fatalf("step %d: subject %s has %d tombstones, holding %+v", step, sub, n, h)
		}
	}
	for sub, h := range s.buried {
		if buried[sub] == 0 || h.n <= 0 {
			t.Fatalf("step %d: empty tombstone holding of %s", step, sub)
		}
	}
	if got := len(s.graves.fifo) - s.graves.head; got > 2*maxTombstones+65 {
		t.Fatalf("step %d: tombstone queue has %d slots for %d tombstones", step, got, len(s.tombs))
	}
}

// TestSessionModel drives the table with random operations of three
// subjects, as roundTrip does (admit before a request, then settle, or end
// for a 2xx DELETE, and bind for an answer naming an id), and checks after
// each: no subject is admitted on an id while another subject's request on
// it is still downstream (unless a DELETE ended the session), and a
// confirmed binding is never changed by another subject's answer; every 97
// steps, the counters and queues match the maps and the requests in
// flight. A failure lists the last operations.
func TestSessionModel(t *testing.T) {
	subjects := []string{"a", "b", "c"}
	for seed := range uint64(3) {
		r := rand.New(rand.NewPCG(seed, 7))
		s := newSessions()
		type req struct {
			id, sub string
			del     bool
			ended   bool // its session was ended by a DELETE meanwhile
		}
		var inflight []req
		want := map[use]int{}
		fresh := 0
		ids := []string{}
		var trace []string // the last operations
		fail := func(step int, format string, a ...any) {
			t.Helper()
			t.Fatalf("seed %d step %d: %s\nlast operations:\n%s", seed, step, fmt.Sprintf(format, a...), strings.Join(trace, "\n"))
		}
		for step := range 30000 {
			pick := func() string {
				if r.IntN(2) == 0 { // a few ids of sessions opened before a restart
					return "pre-" + strconv.Itoa(step/300) + "-" + strconv.Itoa(r.IntN(5))
				}
				if len(ids) == 0 || r.IntN(4) == 0 {
					fresh++
					ids = append(ids, "id-"+strconv.Itoa(fresh))
				}
				return ids[r.IntN(len(ids))]
			}
			note := func(format string, a ...any) {
				if len(trace) == 20 {
					trace = trace[1:]
				}
				trace = append(trace, fmt.Sprintf("%d: ", step)+fmt.Sprintf(format, a...))
			}
			sub := subjects[r.IntN(len(subjects))]
			switch op := r.IntN(10); {
			case op < 3: // a request on an id
				id := pick()
				adm := s.admit(id, sub)
				note("admit %s %s -> %v", id, sub, adm)
				if adm {
					for _, q := range inflight {
						if q.id == id && q.sub != sub && !q.ended {
							fail(step, "%s admitted on %s while %s's request on it is still downstream (binding now %+v)", sub, id, q.sub, s.owner[id])
						}
					}
					inflight = append(inflight, req{id: id, sub: sub, del: r.IntN(10) == 0})
					want[use{id, sub}]++
				}
			case op < 6 && len(inflight) > 0: // an answer
				i := r.IntN(len(inflight))
				q := inflight[i]
				inflight = slices.Delete(inflight, i, i+1)
				if want[use{q.id, q.sub}]--; want[use{q.id, q.sub}] == 0 {
					delete(want, use{q.id, q.sub})
				}
				ok := r.IntN(3) > 0
				before := s.owner[q.id]
				note("answer %s %s del=%v ok=%v", q.id, q.sub, q.del, ok)
				if q.del && ok {
					s.end(q.id, q.sub)
					for j := range inflight {
						if inflight[j].id == q.id {
							inflight[j].ended = true
						}
					}
				} else {
					s.settle(q.id, q.sub, ok)
					if ok && r.IntN(2) == 0 {
						s.bind(q.id, q.sub) // a downstream that names the id in every answer
					}
				}
				if before.confirmed && before.subject != q.sub && s.owner[q.id] != before {
					fail(step, "%s's answer (delete %v, ok %v) on %s changed %s's confirmed binding to %+v", q.sub, q.del, ok, q.id, before.subject, s.owner[q.id])
				}
			default: // an initialize answer naming a new id
				fresh++
				id := "init-" + strconv.Itoa(fresh)
				note("bind %s %s", id, sub)
				s.bind(id, sub)
				ids = append(ids, id)
			}
			if step%97 == 0 {
				checkSessionInvariants(t, s, want, step)
			}
		}
		checkSessionInvariants(t, s, want, -1)
	}
}

// TestSessionIDNotVisibleASCIIRefused checks that an Mcp-Session-Id the
// gateway could check as one id while the downstream reads another is
// never forwarded. net/http's HTTP/1 server leaves Unicode spaces (U+00A0,
// U+0085, U+3000) in a value, and its HTTP/2 server even ASCII spaces and
// tabs at either end; a client trimming or decoding them would read the
// admin's session id. Ids that are not visible ASCII are refused with 400;
// outer ASCII spaces and tabs are dropped as the request arrives, so the
// id checked is the admin's, and refused with 404.
func TestSessionIDNotVisibleASCIIRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		h2   bool
		pad  func(string) string
		want int
	}{
		{name: "http1_nbsp", pad: func(id string) string { return id + "\u00a0" }, want: http.StatusBadRequest},
		{name: "http1_ideographic_space", pad: func(id string) string { return "\u3000" + id }, want: http.StatusBadRequest},
		{name: "http1_nel", pad: func(id string) string { return id + "\u0085" }, want: http.StatusBadRequest},
		{name: "http2_trailing_space", h2: true, pad: func(id string) string { return id + " " }, want: http.StatusNotFound},
		{name: "http2_leading_tab", h2: true, pad: func(id string) string { return "\t" + id }, want: http.StatusNotFound},
		{name: "http2_nbsp", h2: true, pad: func(id string) string { return id + "\u00a0" }, want: http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &issuingTransport{}
			down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				resp, _ := rt.RoundTrip(r)
				for k, v := range resp.Header {
					w.Header()[k] = v
				}
				w.WriteHeader(resp.StatusCode)
				io.Copy(w, resp.Body)
			}))
			g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			front := httptest.NewUnstartedServer(g)
			if tc.h2 {
				front.EnableHTTP2 = true
				front.StartTLS()
			} else {
				front.Start()
			}
			defer front.Close()
			client := front.Client()
			post := func(auth, body, sid string) (*http.Response, string) {
				req, _ := http.NewRequest(http.MethodPost, front.URL+"/mcp", strings.NewReader(body))
				req.Header.Set("Authorization", auth)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if sid != "" {
					req.Header["Mcp-Session-Id"] = []string{sid}
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				return resp, string(b)
			}
			resp, _ := post(admin, initBody, "")
			sid := resp.Header.Get("Mcp-Session-Id")
			if resp.StatusCode != http.StatusOK || sid == "" {
				t.Fatalf("setup: admin's initialize: status %d session %q", resp.StatusCode, sid)
			}
			if want := map[bool]int{false: 1, true: 2}[tc.h2]; resp.ProtoMajor != want {
				t.Fatalf("setup: front answered over HTTP/%d, want HTTP/%d", resp.ProtoMajor, want)
			}
			resp, body := post(viewer, pingBody, tc.pad(sid))
			if got := rt.servedTo(sid); resp.StatusCode != tc.want || slices.Contains(got, "viewer") {
				t.Errorf("viewer presenting the admin's session %s as %q: status %d (%s), downstream served session %s to %q; want %d and never the viewer",
					sid, tc.pad(sid), resp.StatusCode, strings.TrimSpace(body), sid, got, tc.want)
			}
		})
	}
}

// TestInvalidSessionIDRefusedEveryPath checks that every request carrying
// an Mcp-Session-Id that is not one or more visible ASCII characters is
// refused with 400 and never forwarded, whatever its method, and in a
// batch, and that it holds nothing.
func TestInvalidSessionIDRefusedEveryPath(t *testing.T) {
	for _, id := range []string{"", "s 1", "s\t1", "s-1\u00a0", "\u3000s-1", "s-1\x7f", "s-\x001"} {
		for _, tc := range []struct{ method, body string }{
			{http.MethodPost, pingBody},
			{http.MethodPost, pingBatch(2)},
			{http.MethodGet, ""},
			{http.MethodDelete, ""},
		} {
			rt := &countingTransport{}
			g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Transport: rt, Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			w := serveOne(g, tc.method, admin, tc.body, "Mcp-Session-Id", id)
			if w.Code != http.StatusBadRequest || rt.n.Load() != 0 || len(g.sessions.owner) != 0 {
				t.Errorf("%s %.20s with Mcp-Session-Id %q: status %d, forwarded %d time(s), %d binding(s); want 400, 0, 0",
					tc.method, tc.body, id, w.Code, rt.n.Load(), len(g.sessions.owner))
			}
		}
	}
}

// TestStandardHeaderForwardedVerbatim checks that the Mcp-Name header the
// gateway compares with params.name is the one the downstream reads. The
// viewer calls a tool named with a leading space or U+00A0 before
// admin_reset_key (not admin_*, so the default policy allows it) with a
// matching Mcp-Name header: over HTTP/1 the U+00A0 reaches the downstream
// as sent; over HTTP/2 the outer space is not part of the header value, so
// header and body differ and the call is refused (400). Either way a
// downstream routing on the header never reads admin_reset_key.
func TestStandardHeaderForwardedVerbatim(t *testing.T) {
	for _, tc := range []struct {
		name string
		h2   bool
		tool string
		want int
	}{
		// White space at an end, even one HTTP does not trim, is refused
		// whatever the header (policy.CheckName).
		{name: "http1_nbsp", tool: "\u00a0admin_reset_key", want: http.StatusBadRequest},
		{name: "http2_space", h2: true, tool: " admin_reset_key", want: http.StatusBadRequest},
		{name: "http2_nbsp", h2: true, tool: "\u00a0admin_reset_key", want: http.StatusBadRequest},
		{name: "http1_utf8", tool: "r\u00e9sum\u00e9_admin", want: http.StatusOK},
		{name: "http2_utf8", h2: true, tool: "r\u00e9sum\u00e9_admin", want: http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan string, 1)
			down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				got <- r.Header.Get("Mcp-Name")
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
			}))
			g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			front := httptest.NewUnstartedServer(g)
			if tc.h2 {
				front.EnableHTTP2 = true
				front.StartTLS()
			} else {
				front.Start()
			}
			defer front.Close()
			req, _ := http.NewRequest(http.MethodPost, front.URL+"/mcp", strings.NewReader(call(`1`, tc.tool, "")))
			req.Header.Set("Authorization", viewer)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header["Mcp-Method"] = []string{"tools/call"}
			req.Header["Mcp-Name"] = []string{tc.tool}
			resp, err := front.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("viewer's call of %q: status %d, want %d", tc.tool, resp.StatusCode, tc.want)
			}
			select {
			case name := <-got:
				if name != tc.tool {
					t.Errorf("viewer's call of %q (allowed) reached the downstream with Mcp-Name %q", tc.tool, name)
				}
			default:
			}
		})
	}
}

// TestBatchMemberHeaderNotSendable checks that a batch member whose tool
// name the gateway would send as its Mcp-Name header, but cannot send as
// it is (outer spaces, control characters), is refused (-32602) and not
// forwarded, while a name the header carries verbatim is forwarded with
// it.
func TestBatchMemberHeaderNotSendable(t *testing.T) {
	var mu sync.Mutex
	var names []string
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		names = append(names, r.Header.Get("Mcp-Name"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	batch := "[" + call(`1`, " admin_reset_key", "") + "," + call(`2`, "admin_reset_key\\n", "") + "," + call(`3`, "r\u00e9sum\u00e9_admin", "") + "]"
	w := serveOne(g, http.MethodPost, viewer, batch, "Mcp-Method", "tools/call")
	if w.Code != http.StatusOK {
		t.Fatalf("batch: status %d, want 200", w.Code)
	}
	var answers []struct {
		ID    int `json:"id"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &answers); err != nil {
		t.Fatalf("batch answer %s: %v", w.Body.String(), err)
	}
	codes := map[int]int{}
	for _, a := range answers {
		if a.Error != nil {
			codes[a.ID] = a.Error.Code
		}
	}
	if want := map[int]int{1: CodeInvalidParams, 2: CodeInvalidParams}; !maps.Equal(codes, want) {
		t.Errorf("error codes by member id %v, want %v (answer %s)", codes, want, w.Body.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"r\u00e9sum\u00e9_admin"}; !slices.Equal(names, want) {
		t.Errorf("downstream got members with Mcp-Name %q, want %q", names, want)
	}
}

// TestUpstreamWriterNeverTrims checks that the gateway's own client sends a
// header value as it is, UTF-8 included, and refuses one with outer spaces
// or tabs rather than trim it.
func TestUpstreamWriterNeverTrims(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/mcp", nil)
	req.Header["Mcp-Name"] = []string{"\u00a0admin_reset_key"}
	var b bytes.Buffer
	if err := writeRequest(bufio.NewWriter(&b), req, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\r\nMcp-Name: \u00a0admin_reset_key\r\n") {
		t.Errorf("written request %q lacks the value as it was", b.String())
	}
	c := newUpstreamClient()
	for _, v := range []string{" x", "x ", "\tx", "x\t", "x\r\ny: z", "x\x00"} {
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/mcp", nil)
		req.Header["Mcp-Session-Id"] = []string{v}
		if _, err := c.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "invalid header field value") {
			t.Errorf("RoundTrip with header value %q: err %v, want an invalid header field value", v, err)
		}
	}
}

// TestFullTableFairShare checks that principals who filled the session
// table cannot lock a newcomer out: in a table of 64 subjects at their full
// share, every new session of another principal is bound to it (the oldest
// binding of a subject holding the most makes room), the displaced session
// keeps a tombstone naming its subject (no one else may use it, its
// subject still may), and a request on an unseen id is admitted. Over
// HTTP, the admin's initialize in such a table gets a session it is served
// on, which the viewer cannot ride.
func TestFullTableFairShare(t *testing.T) {
	g, rt := newIssuingGateway(t)
	bindMany(g, "filler", maxSessions)
	s := g.sessions
	for i := range 200 {
		sub, id := "new-"+strconv.Itoa(i%7), "n-"+strconv.Itoa(i)
		s.bind(id, sub)
		if b := s.owner[id]; b.subject != sub || !b.confirmed {
			t.Fatalf("new session %d of %s in a full table: bound to %+v, want %s, confirmed", i, sub, b, sub)
		}
	}
	for i := range 7 {
		if h := s.held["new-"+strconv.Itoa(i)]; h == nil || h.n < 28 {
			t.Errorf("new-%d holds %+v, want all its 28 or 29 sessions", i, h)
		}
	}
	// The first to make room is the oldest session of the first subject
	// at the top rank: filler-0 of subject filler-0 (see bindMany).
	displaced, sub := "filler-0", "filler-0"
	if _, ok := s.owner[displaced]; ok {
		t.Fatalf("%s, the oldest session of the first largest holder, is still bound", displaced)
	}
	if tb, ok := s.tombs[displaced]; !ok || tb.subject != sub {
		t.Fatalf("%s's tombstone %+v, want one naming %s", displaced, tb, sub)
	}
	if s.allows(displaced, "new-0") || !s.allows(displaced, sub) {
		t.Errorf("displaced %s: another subject allowed %v, its own %v; want false, true", displaced, s.allows(displaced, "new-0"), s.allows(displaced, sub))
	}
	if !s.allows("never-seen", "stranger") {
		t.Error("a stranger holding none is refused an unseen id in a table where others hold many")
	}
	checkSessionInvariants(t, s, map[use]int{}, -1)

	w := serveOne(g, http.MethodPost, admin, initBody)
	sid := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || sid == "" {
		t.Fatalf("admin's initialize in a full table: status %d session %q", w.Code, sid)
	}
	if w := serveOne(g, http.MethodPost, admin, pingBody, "Mcp-Session-Id", sid); w.Code != http.StatusOK {
		t.Errorf("admin on its new session in a table others filled: status %d, want 200", w.Code)
	}
	if w := serveOne(g, http.MethodPost, viewer, pingBody, "Mcp-Session-Id", sid); w.Code != http.StatusNotFound || slices.Contains(rt.servedTo(sid), "viewer") {
		t.Errorf("viewer on the admin's session: status %d, downstream served it to %q; want 404 and never the viewer", w.Code, rt.servedTo(sid))
	}
}
