package gateway

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tlsCountingServer is an HTTPS server answering "ok" that counts the
// connections it accepted; closeIdle makes it close each connection once
// its answer is written, without saying so, as a server whose idle
// timeout is short does. The client returned trusts its certificate.
func tlsCountingServer(t *testing.T, closeIdle bool) (string, *upstreamClient, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}))
	s.Config.ConnState = func(c net.Conn, st http.ConnState) {
		switch {
		case st == http.StateNew:
			conns.Add(1)
		case st == http.StateIdle && closeIdle:
			c.Close() // a TLS close_notify, then the TCP close
		}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	c := newUpstreamClient()
	c.tlsConfig = s.Client().Transport.(*http.Transport).TLSClientConfig
	t.Cleanup(c.CloseIdleConnections)
	return s.URL, c, &conns
}

// TestReview18TLSIdlePeek checks the peek at an idle connection taken from
// the pool (idlePeek, made at dial) on TLS connections, where it looks at
// the TCP connection under the TLS one: an open one is used again, and one
// the server closed while it was idle is discarded, so that a POST, which
// is never sent twice, still goes through, once.
func TestReview18TLSIdlePeek(t *testing.T) {
	t.Run("open_connection_reused", func(t *testing.T) {
		addr, c, conns := tlsCountingServer(t, false)
		for i := range 3 {
			if _, body := doGet(t, c, "POST", addr, strings.NewReader("x")); body != "ok" {
				t.Fatalf("post %d: %q", i, body)
			}
		}
		if n := conns.Load(); n != 1 {
			t.Errorf("%d connections for 3 POSTs; want 1", n)
		}
	})
	t.Run("closed_connection_discarded", func(t *testing.T) {
		addr, c, conns := tlsCountingServer(t, true)
		for i := range 3 {
			if _, body := doGet(t, c, "POST", addr, strings.NewReader("x")); body != "ok" {
				t.Fatalf("post %d: %q", i, body)
			}
			time.Sleep(20 * time.Millisecond) // let the close arrive
		}
		if n := conns.Load(); n != 3 {
			t.Errorf("%d connections for 3 POSTs on connections closed when idle; want 3", n)
		}
	})
}

// TestReview18TargetCacheTwoHosts checks the upstream client's cache of
// its last URL's target with requests to two hosts at once through one
// client, and to one host under another name and case: each request
// reaches the server its URL names.
func TestReview18TargetCacheTwoHosts(t *testing.T) {
	named := func(name string) string {
		s := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, name)
		}))
		return s.URL
	}
	a, b := named("a"), named("b")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(b, "http://"))
	c := newUpstreamClient()
	defer c.CloseIdleConnections()
	urls := map[string]string{
		a: "a", b: "b",
		"http://localhost:" + port: "b", "http://LocalHost:" + port + "/x": "b",
	}
	var wg sync.WaitGroup
	var failed atomic.Bool
	for u, want := range urls {
		wg.Go(func() {
			for range 30 {
				req, _ := http.NewRequest(http.MethodGet, u, nil)
				resp, err := c.RoundTrip(req)
				if err != nil {
					t.Errorf("GET %s: %v", u, err)
					failed.Store(true)
					return
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(got) != want {
					t.Errorf("GET %s answered by %q; want %q", u, got, want)
					failed.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() {
		return
	}
	// A URL without a host, after a good one, is still refused.
	req := &http.Request{Method: http.MethodGet, URL: mustParse(t, "http:///mcp"), Header: http.Header{}}
	if _, err := c.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "without host") {
		t.Errorf("URL without host: err %v; want one saying so", err)
	}
	if _, err := c.RoundTrip(&http.Request{Method: http.MethodGet, Header: http.Header{}}); err == nil {
		t.Error("request without URL: no error")
	}
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return u
}
