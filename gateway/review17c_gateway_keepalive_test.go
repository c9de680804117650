package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// keepAliveServer is a raw downstream that answers every request of a
// connection with a JSON-RPC result, and with keepAlive as its Keep-Alive
// header when not empty. closeAfter > 0 stands for a downstream that
// closes its idle connections and whose close a late request meets: a
// request that arrives on a connection idle for longer than closeAfter is
// read and the connection closed unanswered (Node, under the TypeScript
// SDK, closes idle connections 5 s after an answer, and a request sent
// then is lost). It returns the URL and the count of connections.
func keepAliveServer(t *testing.T, keepAlive string, closeAfter time.Duration) (string, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		conns.Add(1)
		var answered time.Time
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.ReadAll(req.Body)
			if closeAfter > 0 && !answered.IsZero() && time.Since(answered) > closeAfter {
				return // the idle connection's close crossed the request
			}
			const body = `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`
			head := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + itoa(len(body)) + "\r\n"
			if keepAlive != "" {
				head += "Connection: keep-alive\r\nKeep-Alive: " + keepAlive + "\r\n"
			}
			io.WriteString(c, head+"\r\n"+body)
			answered = time.Now()
		}
	})
	return url, &conns
}

// TestReview17cKeepAliveTimeoutHonoured checks that the gateway's own
// client does not send a request on a connection idle for longer than the
// downstream's Keep-Alive timeout less a second: a tools/call, which is
// not sent again, would meet the downstream's close and be answered 502.
// Without the header, a connection stays usable for as long as before.
func TestReview17cKeepAliveTimeoutHonoured(t *testing.T) {
	for _, tc := range []struct {
		name       string
		keepAlive  string
		closeAfter time.Duration
		conns      int64
	}{
		// timeout=2: reused for at most 1 s; the downstream's close meets
		// a request after 1 s.
		{"timeout_2", "timeout=2, max=1000", time.Second, 2},
		{"no_header_reused", "", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, conns := keepAliveServer(t, tc.keepAlive, tc.closeAfter)
			g, err := New(url+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			gw := newServer(t, g)
			for i := range 2 {
				if i > 0 {
					time.Sleep(1200 * time.Millisecond)
				}
				status, body, err := readAnswer(t, gw.URL+"/mcp", http.MethodPost, call(`1`, "echo", ""))
				if err != nil || status != http.StatusOK || !strings.Contains(body, `"result"`) {
					t.Fatalf("call %d: %d %q (%v); want the downstream's answer", i+1, status, body, err)
				}
			}
			if n := conns.Load(); n != tc.conns {
				t.Errorf("%d connections to the downstream, want %d", n, tc.conns)
			}
		})
	}
}

// TestReview17cKeepAliveShortTimeoutNotKept checks that a connection whose
// downstream announces an idle timeout of a second or less is not kept: it
// could close before any request is sent on it again.
func TestReview17cKeepAliveShortTimeoutNotKept(t *testing.T) {
	for _, ka := range []string{"timeout=1", "timeout=0", "max=5, TIMEOUT=1"} {
		t.Run(ka, func(t *testing.T) {
			url, conns := keepAliveServer(t, ka, 0)
			c := newUpstreamClient()
			for range 3 {
				doGet(t, c, http.MethodPost, url+"/mcp", strings.NewReader("{}"))
			}
			if n := conns.Load(); n != 3 {
				t.Errorf("Keep-Alive: %s: %d connections for 3 requests, want 3 (none kept)", ka, n)
			}
		})
	}
}

// TestReview17cKeepAliveGoServer runs the gateway's own client against a
// Go server that closes idle connections after 2 s and says so
// (Keep-Alive: timeout=2): a connection idle for 1.2 s is not taken again
// (a new one is opened), one idle for a moment is.
func TestReview17cKeepAliveGoServer(t *testing.T) {
	var conns atomic.Int64
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Keep-Alive", "timeout=2")
		io.WriteString(w, "ok")
	}))
	s.Config.IdleTimeout = 2 * time.Second
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	c := newUpstreamClient()
	var got []int64
	for _, pause := range []time.Duration{0, 50 * time.Millisecond, 1200 * time.Millisecond, 50 * time.Millisecond} {
		time.Sleep(pause)
		doGet(t, c, http.MethodPost, s.URL, strings.NewReader("{}"))
		got = append(got, conns.Load())
	}
	if diff := cmp.Diff([]int64{1, 1, 2, 2}, got); diff != "" {
		t.Errorf("connections after each request (-want +got):\n%s", diff)
	}
}

// TestReview17cKeepAliveParse checks how a Keep-Alive header's timeout is
// read: timeout=N seconds (the parameter's name in any case, other
// parameters skipped), the least of several, at most maxKeepAlive; any
// other value is no timeout.
func TestReview17cKeepAliveParse(t *testing.T) {
	type res struct {
		T  time.Duration
		OK bool
	}
	for _, tc := range []struct {
		vals []string
		want res
	}{
		{nil, res{}},
		{[]string{"timeout=5"}, res{5 * time.Second, true}},
		{[]string{"timeout=5, max=1000"}, res{5 * time.Second, true}},
		{[]string{"max=1000,timeout=7"}, res{7 * time.Second, true}},
		{[]string{" Timeout = 3 "}, res{3 * time.Second, true}},
		{[]string{`timeout="4"`}, res{4 * time.Second, true}},
		{[]string{"timeout=5", "timeout=3"}, res{3 * time.Second, true}},
		{[]string{"timeout=5, timeout=2"}, res{2 * time.Second, true}},
		{[]string{"timeout=0"}, res{0, true}},
		{[]string{"timeout=99999999999999999999999"}, res{maxKeepAlive, true}},
		{[]string{"timeout=abc, timeout=6"}, res{6 * time.Second, true}},
		{[]string{"timeout="}, res{}},
		{[]string{"timeout=abc"}, res{}},
		{[]string{"timeout=-1"}, res{}},
		{[]string{"timeout=1.5"}, res{}},
		{[]string{"timeouts=5"}, res{}},
		{[]string{"max=5"}, res{}},
		{[]string{""}, res{}},
	} {
		h := http.Header{}
		if tc.vals != nil {
			h["Keep-Alive"] = tc.vals
		}
		var got res
		got.T, got.OK = keepAliveTimeout(h)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("keepAliveTimeout(Keep-Alive: %q) (-want +got):\n%s", tc.vals, diff)
		}
	}
}
