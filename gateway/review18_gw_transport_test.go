package gateway

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// prefixTransport puts prefix before the path of each request's URL, in
// place: it modifies its request, which http.RoundTripper's contract says
// a RoundTripper should not do, as many a hand-written one still does.
type prefixTransport struct {
	rt     http.RoundTripper
	prefix string
}

func (p prefixTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r.URL.Path = p.prefix + r.URL.Path
	return p.rt.RoundTrip(r)
}

// pathRecorder is a downstream that records the request URI of every
// request and answers each with a JSON-RPC result.
type pathRecorder struct {
	mu   sync.Mutex
	uris []string
}

func (d *pathRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	d.mu.Lock()
	d.uris = append(d.uris, r.URL.RequestURI())
	d.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
}

func (d *pathRecorder) seen() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.uris...)
}

// postTo sends a tools/call of get_customer_record as the viewer to url.
func postTo(t *testing.T, client *http.Client, url string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(call("1", "get_customer_record", `{"id":"c-1"}`)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", viewer)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"result"`) {
		t.Fatalf("POST %s: status %d, body %s", url, resp.StatusCode, b)
	}
}

// TestReview18TransportModifyingURL checks that a request a
// Options.Transport modifies (against http.RoundTripper's contract) is the
// only one modified: the gateway's requests must not share one URL, or
// what one Transport call did to it (a path prefixed, a host chosen for a
// tenant) would hold for every later request, and race with concurrent ones.
func TestReview18TransportModifyingURL(t *testing.T) {
	d := &pathRecorder{}
	down := newServer(t, d)
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{
		Transport: prefixTransport{rt: NewTransport(), prefix: "/api"},
		Logger:    discardLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	for _, q := range []string{"", "", "?a=1", ""} {
		postTo(t, http.DefaultClient, gw.URL+"/mcp"+q)
	}
	want := []string{"/api/mcp", "/api/mcp", "/api/mcp?a=1", "/api/mcp"}
	if diff := cmp.Diff(want, d.seen()); diff != "" {
		t.Errorf("request URIs the downstream saw (-want +got):\n%s", diff)
	}
}

// countingConn counts the writes made on a connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestReview18StdTransportOneWrite checks that through net/http's
// Transport (NewTransport, examples/gateway --std-transport) a forwarded
// POST is written in one piece, header and body together: the Transport
// does so for a body it knows to be in memory, and flushes the header on
// its own before any other body (an extra write, and packet, per request).
func TestReview18StdTransportOneWrite(t *testing.T) {
	down := newServer(t, &pathRecorder{})
	var writes atomic.Int64
	tr := NewTransport()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, writes: &writes}, nil
	}
	defer tr.CloseIdleConnections()
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Transport: tr, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	defer gw.Close()
	postTo(t, http.DefaultClient, gw.URL+"/mcp")
	for i := range 3 {
		before := writes.Load()
		postTo(t, http.DefaultClient, gw.URL+"/mcp")
		if n := writes.Load() - before; n != 1 {
			t.Errorf("forwarded POST %d took %d writes on the downstream connection; want 1 (header and body together)", i+2, n)
		}
	}
}

// TestReview18QueryBothTransports checks the request URI sent downstream
// through the gateway's own client (which shares the upstream URL when the
// client sent no query) and through net/http's (which gets a copy each
// time): the client's query when the upstream URL has none, else the
// operator's query as configured; the upstream URL's path either way.
func TestReview18QueryBothTransports(t *testing.T) {
	for _, tr := range []struct {
		name string
		rt   func() http.RoundTripper
	}{
		{"own_client", func() http.RoundTripper { return nil }},
		{"net_http", func() http.RoundTripper { return NewTransport() }},
	} {
		for _, tc := range []struct {
			name, upstream, client, want string
		}{
			{"no_query", "/mcp", "", "/mcp"},
			{"client_query", "/mcp", "?tenant=b", "/mcp?tenant=b"},
			{"operator_query", "/mcp?tenant=a", "", "/mcp?tenant=a"},
			{"operator_query_kept", "/mcp?tenant=a", "?tenant=b", "/mcp?tenant=a"},
		} {
			t.Run(tr.name+"/"+tc.name, func(t *testing.T) {
				d := &pathRecorder{}
				down := newServer(t, d)
				g, err := New(down.URL+tc.upstream, DemoTokens(), &Options{Transport: tr.rt(), Logger: discardLogger()})
				if err != nil {
					t.Fatal(err)
				}
				gw := newServer(t, g)
				postTo(t, http.DefaultClient, gw.URL+"/mcp"+tc.client)
				postTo(t, http.DefaultClient, gw.URL+"/mcp")
				want := []string{tc.want, strings.TrimSuffix(tc.want, "?tenant=b")}
				if diff := cmp.Diff(want, d.seen()); diff != "" {
					t.Errorf("request URIs the downstream saw (-want +got):\n%s", diff)
				}
			})
		}
	}
}
