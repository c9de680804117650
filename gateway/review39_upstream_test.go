package gateway

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// review39Step is one call on an answer's body and what it must return.
type review39Step struct {
	op      string // "read" (up to 2 bytes), "readall" or "close"
	want    string
	wantErr error
}

// review39Do runs step on body and reports a mismatch.
func review39Do(t *testing.T, body io.ReadCloser, i int, step review39Step) {
	t.Helper()
	var got string
	var err error
	switch step.op {
	case "read":
		p := make([]byte, 2)
		n, rerr := body.Read(p)
		got, err = string(p[:n]), rerr
	case "readall":
		b, rerr := io.ReadAll(body)
		got, err = string(b), rerr
	case "close":
		err = body.Close()
	}
	if got != step.want || !errors.Is(err, step.wantErr) || (err == nil) != (step.wantErr == nil) {
		t.Errorf("step %d, %s: %q, %v; want %q, %v", i, step.op, got, err, step.want, step.wantErr)
	}
}

// TestReview39BodyAfterItsEnd pins what an answer's body of the gateway's
// own client returns once it ended: after Close, every Read fails with
// errBodyClosed and Close may be called again; after its end, Read keeps
// returning io.EOF, a Close does not change that, and the connection is
// used again. A handler that reads after it closed (a client that went
// away) must get an error at once, not hang or get stale bytes.
func TestReview39BodyAfterItsEnd(t *testing.T) {
	for _, tc := range []struct {
		name      string
		method    string
		steps     []review39Step
		wantConns int64
	}{
		{
			name: "closed_before_its_end", method: http.MethodGet, wantConns: 2,
			steps: []review39Step{
				{op: "read", want: "01"},
				{op: "close"},
				{op: "read", wantErr: errBodyClosed},
				{op: "close"},
				{op: "read", wantErr: errBodyClosed},
			},
		},
		{
			name: "closed_unread", method: http.MethodGet, wantConns: 2,
			steps: []review39Step{
				{op: "close"},
				{op: "readall", wantErr: errBodyClosed},
			},
		},
		{
			name: "read_to_its_end", method: http.MethodGet, wantConns: 1,
			steps: []review39Step{
				{op: "readall", want: "0123456789"},
				{op: "read", wantErr: io.EOF},
				{op: "close"},
				{op: "read", wantErr: io.EOF},
				{op: "close"},
			},
		},
		{
			name: "bodiless", method: http.MethodHead, wantConns: 1,
			steps: []review39Step{
				{op: "read", wantErr: io.EOF},
				{op: "close"},
				{op: "read", wantErr: io.EOF},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := review38Serve(t, func(_ int, req *http.Request) string {
				if req.Method == http.MethodHead {
					return "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"
				}
				return "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789"
			})
			c := newUpstreamClient()
			defer c.CloseIdleConnections()
			req, _ := http.NewRequest(tc.method, s.url+"/first", nil)
			resp, err := c.RoundTrip(req)
			if err != nil {
				t.Fatalf("%s /first: %v", tc.method, err)
			}
			for i, step := range tc.steps {
				review39Do(t, resp.Body, i, step)
			}
			if _, body := doGet(t, c, http.MethodGet, s.url+"/second", nil); body != "0123456789" {
				t.Errorf("GET /second: %q, want %q", body, "0123456789")
			}
			if n := s.conns.Load(); n != tc.wantConns {
				t.Errorf("%s /first, then GET /second: %d connections, want %d", tc.method, n, tc.wantConns)
			}
		})
	}
}

// TestReview39TLSCloseNotifyNotKept pins that the gateway's own client does
// not keep a TLS connection whose downstream said goodbye (a close_notify
// alert) right after its answer, in the same TCP segment, while it left the
// TCP connection open: the alert is read into the TLS connection, where the
// idle peek cannot see it, and every later read of that connection ends at
// once. A POST (a tools/call) sent on it would fail unanswered, and is not
// sent again; it must go on a new connection.
func TestReview39TLSCloseNotifyNotKept(t *testing.T) {
	ca := newTestCA(t, "server-ca")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{ca.issue(t, false, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))}}
	var mu sync.Mutex
	var seen []string // "connection: METHOD /path"
	var wg sync.WaitGroup
	var nconns int
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			nconns++
			conn := nconns
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				nc.SetDeadline(time.Now().Add(10 * time.Second)) // a bound for a failing test
				hc := &holdConn{Conn: nc}
				tc := tls.Server(hc, cfg)
				br := bufio.NewReader(tc)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					mu.Lock()
					seen = append(seen, fmt.Sprintf("%d: %s %s", conn, req.Method, req.URL.Path))
					first := len(seen) == 1
					mu.Unlock()
					if conn > 1 {
						io.WriteString(tc, review38OK)
						continue
					}
					if !first {
						return // a request on the connection that said goodbye
					}
					// The answer, then the close_notify, in one TCP write; the
					// TCP connection stays open.
					hc.hold = true
					io.WriteString(tc, review38OK)
					tc.CloseWrite()
					nc.SetWriteDeadline(time.Time{}) // CloseWrite set it to now
					if hc.flush() != nil {
						return
					}
				}
			}()
		}
	}()
	c := newUpstreamClient()
	defer c.CloseIdleConnections()
	c.tlsConfig = &tls.Config{RootCAs: ca.pool}
	url := "https://" + ln.Addr().String()
	if _, body := doGet(t, c, http.MethodGet, url+"/first", nil); body != "ok" {
		t.Fatalf("GET /first: %q, want %q", body, "ok")
	}
	req, _ := http.NewRequest(http.MethodPost, url+"/call", bytes.NewReader([]byte(`{}`)))
	resp, err := c.RoundTrip(req)
	if err != nil {
		t.Fatalf("POST /call after an answer with a close_notify: %v", err)
	}
	if got := review38Read(t, resp); got != "ok" {
		t.Errorf("POST /call: %q, want %q", got, "ok")
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"1: GET /first", "2: POST /call"}, seen); diff != "" {
		t.Errorf("requests seen per connection (-want +got):\n%s", diff)
	}
}

// TestReview39KeepAliveTimeoutValues pins how keepAliveTimeout reads
// timeouts of more than one digit, with leading zeros, at and past its cap
// of an hour, and quoted or unbalanced ones. A timeout read as another
// number keeps connections the downstream is about to close, and a
// tools/call sent on one fails.
func TestReview39KeepAliveTimeoutValues(t *testing.T) {
	type res struct {
		T  time.Duration
		OK bool
	}
	for _, tc := range []struct {
		name string
		vals []string
		want res
	}{
		{"two_digits", []string{"timeout=15"}, res{15 * time.Second, true}},
		{"nine_and_zero", []string{"timeout=90"}, res{90 * time.Second, true}},
		{"leading_zero", []string{"timeout=05"}, res{5 * time.Second, true}},
		{"zeros", []string{"timeout=000"}, res{0, true}},
		{"at_the_cap", []string{"timeout=3600"}, res{time.Hour, true}},
		{"past_the_cap", []string{"timeout=3601"}, res{time.Hour, true}},
		{"least_of_two_digits", []string{"timeout=10, timeout=9"}, res{9 * time.Second, true}},
		{"zero_then_more", []string{"timeout=0, timeout=5"}, res{0, true}},
		{"quoted_two_digits", []string{`timeout="12"`}, res{12 * time.Second, true}},
		{"quoted_empty", []string{`timeout=""`}, res{}},
		{"lone_quote", []string{`timeout="`}, res{}},
		{"open_quote", []string{`timeout="5`}, res{}},
		{"close_quote", []string{`timeout=5"`}, res{}},
		{"byte_before_zero", []string{"timeout=/"}, res{}},
		{"byte_after_nine", []string{"timeout=:"}, res{}},
		{"no_equals_then_timeout", []string{"close, timeout=4"}, res{4 * time.Second, true}},
		{"empty_pieces", []string{",, timeout=6,"}, res{6 * time.Second, true}},
		{"double_equals", []string{"timeout==5"}, res{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got res
			got.T, got.OK = keepAliveTimeout(http.Header{"Keep-Alive": tc.vals})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("keepAliveTimeout(Keep-Alive: %q) (-want +got):\n%s", tc.vals, diff)
			}
		})
	}
}

// review39Conn is a connection that only records that it was closed.
type review39Conn struct {
	net.Conn
	name   string
	closed *[]string
}

func (c *review39Conn) Close() error {
	*c.closed = append(*c.closed, c.name)
	return nil
}

// review39Pool is a client whose pool for key holds one connection per
// entry of ages (how long each has been idle at now, the bottom first),
// named "i0", "i1", ...; closed records the connections closed.
func review39Pool(t *testing.T, key string, now time.Time, ages []time.Duration, closed *[]string) *upstreamClient {
	t.Helper()
	c := newUpstreamClient()
	hp := c.poolLocked(key)
	for i, age := range ages {
		nc := &review39Conn{name: fmt.Sprintf("i%d", i), closed: closed}
		hp.idle = append(hp.idle, &upConn{key: key, nc: nc, idleAt: now.Add(-age), used: true})
	}
	return c
}

// review39Names returns the names review39Pool gives n connections.
func review39Names(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("i%d", i)
	}
	return names
}

// review39Idle returns the names of key's idle connections, the bottom
// first.
func review39Idle(c *upstreamClient, key string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := []string{}
	if hp := c.pools[key]; hp != nil {
		for _, pc := range hp.idle {
			names = append(names, pc.nc.(*review39Conn).name)
		}
	}
	return names
}

// TestReview39PutSweepsAndBounds pins what put does with a connection
// whose answer ended: kept on top of the pool, after the connections idle
// for their limit or longer are closed from the bottom (the limit is the
// client's idle timeout, or the downstream's announced Keep-Alive timeout
// less a second when shorter), and closed itself when the pool holds
// maxIdle or the announced timeout leaves no time to use it. A connection
// kept past the downstream's timeout meets its close, and a tools/call sent
// on it fails; one never closed holds a socket.
func TestReview39PutSweepsAndBounds(t *testing.T) {
	const key = "http://127.0.0.1:1"
	for _, tc := range []struct {
		name       string
		maxIdle    int           // 0: newUpstreamClient's
		announce   time.Duration // 0: none
		ages       []time.Duration
		wantKeep   bool // announce's answer, when announced
		wantIdle   []string
		wantClosed []string
	}{
		{
			name: "none_expired", ages: []time.Duration{10 * time.Second, 5 * time.Second},
			wantIdle: []string{"i0", "i1", "new"},
		},
		{
			name: "at_idle_timeout_closed", ages: []time.Duration{90 * time.Second, 90*time.Second - 1, time.Second},
			wantIdle: []string{"i1", "i2", "new"}, wantClosed: []string{"i0"},
		},
		{
			name: "expired_from_the_bottom", ages: []time.Duration{100 * time.Second, 95 * time.Second, 10 * time.Second},
			wantIdle: []string{"i2", "new"}, wantClosed: []string{"i0", "i1"},
		},
		{
			name: "announced_timeout_less_a_second", announce: 5 * time.Second, wantKeep: true,
			ages:     []time.Duration{4 * time.Second, 4*time.Second - 1},
			wantIdle: []string{"i1", "new"}, wantClosed: []string{"i0"},
		},
		{
			name: "announced_past_idle_timeout", announce: 200 * time.Second, wantKeep: true,
			ages:     []time.Duration{90 * time.Second, 89 * time.Second},
			wantIdle: []string{"i1", "new"}, wantClosed: []string{"i0"},
		},
		{
			name: "announced_margin_keeps_none", announce: keepAliveMargin, wantKeep: false,
			ages:     []time.Duration{0},
			wantIdle: []string{}, wantClosed: []string{"i0", "new"},
		},
		{
			name: "announced_zero_keeps_none", announce: time.Nanosecond, wantKeep: false,
			wantIdle: []string{}, wantClosed: []string{"new"},
		},
		{
			name: "announced_margin_and_a_nanosecond", announce: keepAliveMargin + 1, wantKeep: true,
			wantIdle: []string{"new"},
		},
		{
			name: "announced_just_over_margin", announce: 2 * time.Second, wantKeep: true,
			ages:     []time.Duration{time.Second, time.Second - 1},
			wantIdle: []string{"i1", "new"}, wantClosed: []string{"i0"},
		},
		{
			name: "full_closes_the_new", maxIdle: 2, ages: []time.Duration{2 * time.Second, time.Second},
			wantIdle: []string{"i0", "i1"}, wantClosed: []string{"new"},
		},
		{
			// The 256 idle connections per host that Options.Transport's
			// doc promises.
			name: "default_255_kept", ages: slices.Repeat([]time.Duration{time.Second}, 255),
			wantIdle: append(review39Names(255), "new"),
		},
		{
			name: "default_256_full", ages: slices.Repeat([]time.Duration{time.Second}, 256),
			wantIdle: review39Names(256), wantClosed: []string{"new"},
		},
		{
			name: "expired_make_room", maxIdle: 2, ages: []time.Duration{91 * time.Second, time.Second},
			wantIdle: []string{"i1", "new"}, wantClosed: []string{"i0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var closed []string
				c := review39Pool(t, key, time.Now(), tc.ages, &closed)
				if tc.maxIdle != 0 {
					c.maxIdle = tc.maxIdle
				}
				if tc.announce != 0 {
					if got := c.announce(key, tc.announce); got != tc.wantKeep {
						t.Errorf("announce(%v) = %v, want %v", tc.announce, got, tc.wantKeep)
					}
				}
				c.put(&upConn{key: key, nc: &review39Conn{name: "new", closed: &closed}})
				if diff := cmp.Diff(tc.wantIdle, review39Idle(c, key)); diff != "" {
					t.Errorf("put onto %d idle connections: idle (-want +got):\n%s", len(tc.ages), diff)
				}
				if diff := cmp.Diff(tc.wantClosed, closed); diff != "" {
					t.Errorf("put onto %d idle connections: closed (-want +got):\n%s", len(tc.ages), diff)
				}
			})
		})
	}
}

// TestReview39GetTakesTheMostRecent pins what get hands out: the most
// recent idle connection while it has been idle for less than its limit
// (the client's idle timeout, or the announced one less a second), after
// closing the ones idle for longer; nil when none is left. A connection
// idle for too long may be closing at the downstream as the request
// reaches it.
func TestReview39GetTakesTheMostRecent(t *testing.T) {
	const key = "http://127.0.0.1:1"
	for _, tc := range []struct {
		name       string
		announce   time.Duration // 0: none
		ages       []time.Duration
		want       string // "": nil
		wantIdle   []string
		wantClosed []string
	}{
		{name: "no_pool"},
		{name: "most_recent", ages: []time.Duration{10 * time.Second, 5 * time.Second}, want: "i1", wantIdle: []string{"i0"}},
		{name: "under_idle_timeout", ages: []time.Duration{90*time.Second - 1}, want: "i0", wantIdle: []string{}},
		{
			name: "at_idle_timeout", ages: []time.Duration{90 * time.Second},
			wantIdle: []string{}, wantClosed: []string{"i0"},
		},
		{
			name: "all_expired", ages: []time.Duration{95 * time.Second, 91 * time.Second},
			wantIdle: []string{}, wantClosed: []string{"i1", "i0"},
		},
		{
			name: "announced_under", announce: 5 * time.Second, ages: []time.Duration{4*time.Second - 1},
			want: "i0", wantIdle: []string{},
		},
		{
			name: "announced_at", announce: 5 * time.Second, ages: []time.Duration{4 * time.Second},
			wantIdle: []string{}, wantClosed: []string{"i0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var closed []string
				now := time.Now()
				c := newUpstreamClient()
				if tc.ages != nil {
					c = review39Pool(t, key, now, tc.ages, &closed)
				}
				if tc.announce != 0 {
					c.announce(key, tc.announce)
				}
				got := ""
				if pc := c.get(key, now); pc != nil {
					got = pc.nc.(*review39Conn).name
				}
				if got != tc.want {
					t.Errorf("get with idle ages %v: %q, want %q", tc.ages, got, tc.want)
				}
				want := tc.wantIdle
				if want == nil {
					want = []string{}
				}
				if diff := cmp.Diff(want, review39Idle(c, key)); diff != "" {
					t.Errorf("get with idle ages %v: idle left (-want +got):\n%s", tc.ages, diff)
				}
				if diff := cmp.Diff(tc.wantClosed, closed); diff != "" {
					t.Errorf("get with idle ages %v: closed (-want +got):\n%s", tc.ages, diff)
				}
			})
		})
	}
}

// TestReview39CloseIdleKeepsAnnounced pins CloseIdleConnections: every idle
// connection of every downstream is closed, and what a downstream
// announced of its idle timeout still holds for the connections made after
// (as its doc says): a downstream does not announce it again on every
// answer.
func TestReview39CloseIdleKeepsAnnounced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var closed []string
		now := time.Now()
		c := review39Pool(t, "http://a:1", now, []time.Duration{2 * time.Second, time.Second}, &closed)
		hp := c.poolLocked("http://b:1")
		hp.idle = append(hp.idle, &upConn{key: "http://b:1", nc: &review39Conn{name: "b0", closed: &closed}, idleAt: now})
		c.announce("http://a:1", 5*time.Second)
		c.CloseIdleConnections()
		slices.Sort(closed)
		if diff := cmp.Diff([]string{"b0", "i0", "i1"}, closed); diff != "" {
			t.Errorf("CloseIdleConnections: closed (-want +got):\n%s", diff)
		}
		for _, key := range []string{"http://a:1", "http://b:1"} {
			if got := review39Idle(c, key); len(got) != 0 {
				t.Errorf("CloseIdleConnections: %s keeps %v idle", key, got)
			}
		}
		c.mu.Lock()
		limit := c.idleLimit(c.pools["http://a:1"])
		c.mu.Unlock()
		if limit != 4*time.Second {
			t.Errorf("idle limit after CloseIdleConnections: %v, want the announced 5s less 1s", limit)
		}
	})
}

// TestReview39BadChunkIsMalformed pins that an answer's body whose chunked
// framing is bad fails its Read with a malformedError, which the gateway
// reports as a malformed answer (failMalformed), whatever net/http's words
// for it: a chunk-size line over 4 KiB is "header line too long", which
// says nothing of the answer's framing. An operator told only "the request
// failed" would look at the network instead of the downstream.
func TestReview39BadChunkIsMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, chunk string
	}{
		{"invalid_size", "zz\r\nabc\r\n0\r\n\r\n"},
		{"size_line_too_long", "3;" + strings.Repeat("x", 5000) + "\r\nabc\r\n0\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := review38Serve(t, func(int, *http.Request) string {
				return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + tc.chunk
			})
			c := newUpstreamClient()
			defer c.CloseIdleConnections()
			req, _ := http.NewRequest(http.MethodGet, s.url, nil)
			resp, err := c.RoundTrip(req)
			if err != nil {
				t.Fatalf("GET: %v", err)
			}
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			var me *malformedError
			if !errors.As(err, &me) {
				t.Errorf("reading a body with chunk %.20q: err %v, want a malformedError", tc.chunk, err)
			}
			if got := failureOf(err, false, true); got != failMalformed {
				t.Errorf("failureOf(%v) = %v, want failMalformed", err, got)
			}
		})
	}
}
