package gateway

import (
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// foldingTransport is an in-process stateful downstream that looks its
// sessions up without regard to case, as one keeping them in a table with
// a case-insensitive collation does (MySQL's and SQL Server's defaults),
// or in files on a case-insensitive file system: an initialize gets a new
// id with upper and lower case letters, a request carrying an id equal to
// a live one under ASCII case folding is served on that session, any other
// gets 404. It records the subject the gateway named on every request
// served, per session.
type foldingTransport struct {
	mu       sync.Mutex
	next     int
	live     map[string]bool     // lower-cased id
	subjects map[string][]string // lower-cased id -> subjects served
}

func (rt *foldingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
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
	status, body := http.StatusOK, `{"jsonrpc":"2.0","id":1,"result":{}}`
	sid := r.Header.Get("Mcp-Session-Id")
	key := strings.ToLower(sid)
	switch {
	case sid == "" && strings.Contains(string(b), `"initialize"`):
		rt.next++
		id := "SeSs-" + strconv.Itoa(rt.next)
		rt.live[strings.ToLower(id)] = true
		h.Set("Mcp-Session-Id", id)
	case sid != "" && rt.live[key]:
		rt.subjects[key] = append(rt.subjects[key], r.Header.Get(HeaderSubject))
		if r.Method == http.MethodDelete {
			delete(rt.live, key)
		}
	default:
		status, body = http.StatusNotFound, "session not found"
		h.Set("Content-Type", "text/plain")
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}, nil
}

func (rt *foldingTransport) servedTo(id string) []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return slices.Clone(rt.subjects[strings.ToLower(id)])
}

// TestReview19SessionIDCaseVariantRefused checks that a session bound to
// one principal cannot be ridden by another presenting its id in other
// case, in front of a downstream that reads ids without regard to case:
// the viewer's POST, GET and DELETE on a case variant of the admin's
// session id are refused (404) and never forwarded, and the admin's
// session is still served to the admin, under either spelling.
func TestReview19SessionIDCaseVariantRefused(t *testing.T) {
	rt := &foldingTransport{}
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Transport: rt, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	sid := initialize(t, g, admin)
	if w := serveOne(g, http.MethodPost, admin, pingBody, "Mcp-Session-Id", sid); w.Code != http.StatusOK {
		t.Fatalf("admin on its own session: status %d, want 200", w.Code)
	}
	for _, variant := range []string{strings.ToLower(sid), strings.ToUpper(sid), "sESS-1"} {
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			body := ""
			if method == http.MethodPost {
				body = pingBody
			}
			w := serveOne(g, method, viewer, body, "Mcp-Session-Id", variant)
			if w.Code != http.StatusNotFound {
				t.Errorf("viewer %s on %q (the admin's is %q): status %d %q, want 404", method, variant, sid, w.Code, w.Body.String())
			}
		}
	}
	if got, want := rt.servedTo(sid), []string{"admin"}; !slices.Equal(got, want) {
		t.Errorf("the downstream served the admin's session to %q; want %q (the admin only)", got, want)
	}
	if w := serveOne(g, http.MethodPost, admin, pingBody, "Mcp-Session-Id", strings.ToLower(sid)); w.Code != http.StatusOK {
		t.Errorf("admin on its own session, lower case: status %d, want 200", w.Code)
	}
}

// TestReview19SessionIDCaseVariantHold checks the same for an id the
// gateway has not seen (a session opened before a restart): while the
// admin's request on it is downstream, the viewer's on a case variant is
// refused; and once the admin's 2xx confirmed it, the viewer's still is.
func TestReview19SessionIDCaseVariantHold(t *testing.T) {
	s := newSessions()
	if !s.admit("AbC-1", "admin") {
		t.Fatal("admin's first use of an unseen id refused")
	}
	if s.admit("abc-1", "viewer") || s.allows("ABC-1", "viewer") {
		t.Error("viewer admitted on a case variant of an id the admin holds")
	}
	s.settle("AbC-1", "admin", true)
	if s.allows("abc-1", "viewer") || s.allows("aBc-1", "viewer") {
		t.Error("viewer allowed on a case variant of an id bound to the admin")
	}
	if !s.allows("abc-1", "admin") {
		t.Error("admin refused on a case variant of its own id")
	}
	s.bind("XyZ", "admin")
	s.bind("xyz", "viewer") // another answer naming the id in other case
	if s.allows("XYZ", "viewer") || !s.allows("xyz", "admin") {
		t.Error("a second answer naming an admin's id in other case gave it to the viewer")
	}
	s.end("XYZ", "admin")
	if !s.allows("xyz", "viewer") {
		t.Error("an ended session's id, in other case, still bound")
	}
}
