package gateway

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview26dBodyRefusalNamesItsCaller: a GET's or a DELETE's body is
// read, and refused, only once its caller is authenticated; the refusal's
// record and log line named no one, so an authenticated principal's
// refused request read in the audit trail as an anonymous one's.
func TestReview26dBodyRefusalNamesItsCaller(t *testing.T) {
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		for _, declared := range []bool{false, true} { // declared over the cap, or sent chunked
			var down atomic.Int64
			ds := newServer(t, silentStream(&down))
			sink := &memSink{}
			var logs lockedLog
			g, err := New(ds.URL, DemoTokens(), &Options{MaxBodyBytes: 1000, Audit: sink, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			gw := newServer(t, g)
			var body io.Reader = strings.NewReader(strings.Repeat(" ", 2000))
			if !declared {
				body = io.MultiReader(body) // no length known: sent chunked
			}
			req, err := http.NewRequest(method, gw.URL+"/mcp", body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", viewer)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("%s: status %d, want 413", method, resp.StatusCode)
			}
			if n := down.Load(); n != 0 {
				t.Fatalf("%s: %d requests forwarded", method, n)
			}
			evs := sink.since(0)
			if len(evs) != 1 {
				t.Fatalf("%s: %d records, want 1: %+v", method, len(evs), evs)
			}
			if e := evs[0]; e.Tool != "" || e.Phase != audit.PhaseOutcome || e.Allowed || e.Subject != "viewer" || strings.Join(e.Roles, ",") != "viewer" {
				t.Errorf("%s (declared %v): record %+v, want an outcome without a tool, refused, for subject viewer (roles viewer)", method, declared, e)
			}
			if out := logs.String(); !strings.Contains(out, `"msg":"deny"`) || !strings.Contains(out, `"subject":"viewer"`) {
				t.Errorf("%s: the deny line does not name the caller:\n%s", method, out)
			}
		}
	}
}

// TestReview26dBodyChecks: what the reading of a GET's body does and does
// not do. An unauthenticated GET's body is not read before its 401 (nor
// is "100 Continue" sent for it); an authenticated one's is (the client
// that waits for "100 Continue" is sent it); a body shorter than its
// Content-Length, its client gone, is refused 400 with one record and ends
// the handler; and the read deadline of a server with a ReadTimeout (the
// example binary's) ends with the body, so that it does not cut a stream.
func TestReview26dBodyChecks(t *testing.T) {
	var down atomic.Int64
	ds := newServer(t, silentStream(&down))
	t.Cleanup(ds.CloseClientConnections) // before gw's Close
	sink := &memSink{}
	g, err := New(ds.URL, DemoTokens(), &Options{Timeout: 20 * time.Second, Audit: sink, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	var handlers atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers.Add(1)
		defer handlers.Add(-1)
		g.ServeHTTP(w, r)
	})
	gw := newServer(t, h)
	dial := func(t *testing.T, addr string) net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(5 * time.Second))
		return c
	}
	head := func(auth string) string {
		return "GET /mcp HTTP/1.1\r\nHost: " + gw.Listener.Addr().String() + "\r\n" + auth + "Accept: text/event-stream\r\n"
	}

	t.Run("unauthenticated_expect", func(t *testing.T) {
		n := sink.count()
		c := dial(t, gw.Listener.Addr().String())
		io.WriteString(c, head("")+"Expect: 100-continue\r\nContent-Length: 10\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("status %d, want 401 (no 100 Continue for a caller not authenticated)", resp.StatusCode)
		}
		if evs := sink.since(n); len(evs) != 1 || evs[0].Tool != "" || evs[0].Subject != "" {
			t.Errorf("records %+v, want one without a tool or subject", evs)
		}
	})

	t.Run("authenticated_expect", func(t *testing.T) {
		c := dial(t, gw.Listener.Addr().String())
		io.WriteString(c, head("Authorization: "+viewer+"\r\n")+"Expect: 100-continue\r\nContent-Length: 2\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusContinue {
			t.Fatalf("status %d, want 100 first", resp.StatusCode)
		}
		io.WriteString(c, "{}")
		if resp, err = http.ReadResponse(br, nil); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, want 200", resp.StatusCode)
		}
		c.Close()
		waitZero(t, &handlers, 3*time.Second, "gateway handlers")
		waitZero(t, &down, 3*time.Second, "downstream streams")
	})

	t.Run("short_body", func(t *testing.T) {
		n := sink.count()
		c := dial(t, gw.Listener.Addr().String())
		io.WriteString(c, head("Authorization: "+viewer+"\r\n")+"Content-Length: 100\r\n\r\n{}")
		time.Sleep(100 * time.Millisecond)
		if handlers.Load() != 1 {
			t.Fatalf("%d handlers, want 1 waiting for the body", handlers.Load())
		}
		c.(*net.TCPConn).CloseWrite()
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d, want 400", resp.StatusCode)
		}
		waitZero(t, &handlers, 3*time.Second, "gateway handlers")
		if evs := sink.since(n); len(evs) != 1 || evs[0].Tool != "" || evs[0].Code != "INVALID_REQUEST" {
			t.Errorf("records %+v, want one INVALID_REQUEST without a tool", evs)
		}
		if d := down.Load(); d != 0 {
			t.Errorf("%d forwarded", d)
		}
	})

	t.Run("read_timeout", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: h, ReadTimeout: 300 * time.Millisecond}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		c := dial(t, ln.Addr().String())
		io.WriteString(c, head("Authorization: "+viewer+"\r\n")+"Content-Length: 2\r\n\r\n{}")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, want 200", resp.StatusCode)
		}
		time.Sleep(800 * time.Millisecond) // past the ReadTimeout
		if hs, d := handlers.Load(), down.Load(); hs != 1 || d != 1 {
			t.Fatalf("%d handlers, %d streams %v after a ReadTimeout of 300ms, want 1 each", hs, d, 800*time.Millisecond)
		}
		c.Close()
		waitZero(t, &handlers, 3*time.Second, "gateway handlers")
		waitZero(t, &down, 3*time.Second, "downstream streams")
	})
}
