package gateway

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// countConns returns a server running h that counts the connections it
// accepted.
func countConns(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	s := httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			n.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s, &n
}

func doGet(t *testing.T, rt http.RoundTripper, method, url string, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: body: %v", method, url, err)
	}
	return resp, string(b)
}

func TestUpstreamClientReusesConnections(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/chunked":
			io.WriteString(w, "part1,")
			w.(http.Flusher).Flush()
			io.WriteString(w, "part2")
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		default:
			io.WriteString(w, r.Method+" "+r.URL.RequestURI()+" "+string(b)+" "+r.Header.Get("X-A"))
		}
	})
	s, conns := countConns(t, h)
	c := newUpstreamClient()
	var got []string
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/a?x=1", ""},
		{"POST", "/b", "hello"},
		{"GET", "/chunked", ""},
		{"DELETE", "/empty", ""},
		{"HEAD", "/c", ""},
		{"POST", "/d", ""},
	} {
		var body io.Reader
		if tc.body != "" {
			body = strings.NewReader(tc.body)
		}
		req, _ := http.NewRequest(tc.method, s.URL+tc.path, body)
		req.Header.Set("X-A", "v")
		resp, err := c.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got = append(got, resp.Status+" "+string(b))
	}
	want := []string{
		"200 OK GET /a?x=1  v",
		"200 OK POST /b hello v",
		"200 OK part1,part2",
		"204 No Content ",
		"200 OK ",
		"200 OK POST /d  v",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for sequential requests, want 1", n)
	}
}

func TestUpstreamClientDiscardsConnections(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/close":
			w.Header().Set("Connection", "close")
			io.WriteString(w, "bye")
		case "/big":
			io.WriteString(w, strings.Repeat("x", 256<<10))
		default:
			io.WriteString(w, "ok")
		}
	})
	for _, tc := range []struct {
		name  string
		first func(t *testing.T, c *upstreamClient, url string)
		conns int64
	}{
		{
			name:  "reused_after_full_read",
			first: func(t *testing.T, c *upstreamClient, url string) { doGet(t, c, "GET", url+"/ok", nil) },
			conns: 1,
		},
		{
			name:  "connection_close_answer",
			first: func(t *testing.T, c *upstreamClient, url string) { doGet(t, c, "GET", url+"/close", nil) },
			conns: 2,
		},
		{
			name: "connection_close_request",
			first: func(t *testing.T, c *upstreamClient, url string) {
				req, _ := http.NewRequest("GET", url+"/ok", nil)
				req.Close = true
				resp, err := c.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				io.ReadAll(resp.Body)
				resp.Body.Close()
			},
			conns: 2,
		},
		{
			name: "body_not_consumed",
			first: func(t *testing.T, c *upstreamClient, url string) {
				req, _ := http.NewRequest("GET", url+"/big", nil)
				resp, err := c.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Read(make([]byte, 10))
				resp.Body.Close()
				if _, err := resp.Body.Read(make([]byte, 10)); err == nil {
					t.Error("read after Close succeeded")
				}
			},
			conns: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, conns := countConns(t, h)
			c := newUpstreamClient()
			tc.first(t, c, s.URL)
			if _, body := doGet(t, c, "GET", s.URL+"/ok", nil); body != "ok" {
				t.Errorf("second answer %q", body)
			}
			if n := conns.Load(); n != tc.conns {
				t.Errorf("%d connections, want %d", n, tc.conns)
			}
		})
	}
}

// rawServer answers each connection with fn, reading requests itself.
func rawServer(t *testing.T, fn func(c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close() // ends handlers waiting on a client's idle connection
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				fn(c, bufio.NewReader(c))
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func TestUpstreamClientWire(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			b, _ := io.ReadAll(req.Body)
			mu.Lock()
			seen = append(seen, req.Method+" "+req.Host+" "+strings.Join(req.TransferEncoding, ",")+" "+string(b))
			mu.Unlock()
			switch req.URL.Path {
			case "/early":
				io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			case "/eof":
				// No length, not chunked: the body ends with the connection.
				io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\nuntil-eof")
				return
			case "/huge":
				io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Big: "+strings.Repeat("a", 2<<20)+"\r\n\r\n")
				return
			default:
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
		}
	})
	c := newUpstreamClient()
	if _, body := doGet(t, c, "GET", url+"/early", nil); body != "ok" {
		t.Errorf("after 103: %q", body)
	}
	if _, body := doGet(t, c, "GET", url+"/eof", nil); body != "until-eof" {
		t.Errorf("close-delimited: %q", body)
	}
	// A body of unknown length goes chunked.
	pr, pw := io.Pipe()
	go func() { io.WriteString(pw, "streamed"); pw.Close() }()
	if _, body := doGet(t, c, "POST", url+"/ok", pr); body != "ok" {
		t.Errorf("chunked request: %q", body)
	}
	req, _ := http.NewRequest("GET", url+"/huge", nil)
	if _, err := c.RoundTrip(req); err == nil {
		t.Error("a 2 MiB response header was accepted")
	}
	want := []string{
		"GET " + strings.TrimPrefix(url, "http://") + "  ",
		"GET " + strings.TrimPrefix(url, "http://") + "  ",
		"POST " + strings.TrimPrefix(url, "http://") + " chunked streamed",
		"GET " + strings.TrimPrefix(url, "http://") + "  ",
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("requests seen (-want +got):\n%s", diff)
	}
}

func TestUpstreamClientRefusesInjection(t *testing.T) {
	s, conns := countConns(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	c := newUpstreamClient()
	for _, tc := range []struct {
		name string
		mod  func(r *http.Request)
	}{
		{"value_crlf", func(r *http.Request) { r.Header["X-A"] = []string{"v\r\nX-Evil: 1"} }},
		{"value_nul", func(r *http.Request) { r.Header["X-A"] = []string{"v\x00"} }},
		{"name_space", func(r *http.Request) { r.Header["X A"] = []string{"v"} }},
		{"name_colon", func(r *http.Request) { r.Header["X:A"] = []string{"v"} }},
		{"host_crlf", func(r *http.Request) { r.Host = "h\r\nX-Evil: 1" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", s.URL, nil)
			tc.mod(req)
			if _, err := c.RoundTrip(req); err == nil {
				t.Error("sent")
			}
		})
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("%d connections opened for refused requests", n)
	}
}

func TestUpstreamClientPeerClosedIdle(t *testing.T) {
	// The server closes every connection after one answer, without saying
	// so: the pooled connection is dead when the next POST comes, and the
	// POST, which must not be sent twice, still goes through once.
	var posts atomic.Int64
	url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.ReadAll(req.Body)
		if req.Method == http.MethodPost {
			posts.Add(1)
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	c := newUpstreamClient()
	for i := range 3 {
		if _, body := doGet(t, c, "POST", url, strings.NewReader("x")); body != "ok" {
			t.Fatalf("post %d: %q", i, body)
		}
		time.Sleep(20 * time.Millisecond) // let the close arrive
	}
	if n := posts.Load(); n != 3 {
		t.Errorf("server saw %d POSTs, want 3", n)
	}
}

func TestUpstreamClientContext(t *testing.T) {
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/body" {
			io.WriteString(w, "first")
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	s, _ := countConns(t, h)
	defer close(release)
	c := newUpstreamClient()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/header", nil)
	start := time.Now()
	_, err := c.RoundTrip(req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting for headers: err %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("header wait interrupted after %v", d)
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	req, _ = http.NewRequestWithContext(ctx2, "GET", s.URL+"/body", nil)
	resp, err := c.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first" {
		t.Fatalf("first piece %q, %v", buf, err)
	}
	time.AfterFunc(30*time.Millisecond, cancel2)
	if _, err := resp.Body.Read(buf); err == nil {
		t.Error("read on a canceled request succeeded")
	}
	resp.Body.Close()
}

func TestUpstreamClientDialError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	req, _ := http.NewRequest("POST", "http://"+addr+"/mcp", strings.NewReader("x"))
	if _, err := newUpstreamClient().RoundTrip(req); err == nil {
		t.Error("no error from a closed port")
	}
	req, _ = http.NewRequest("GET", "ftp://"+addr+"/", nil)
	if _, err := newUpstreamClient().RoundTrip(req); err == nil {
		t.Error("no error for ftp")
	}
}

// TestGatewayBothTransports runs the gateway's relaying cases on its own
// client and on net/http's Transport alike.
func TestGatewayBothTransports(t *testing.T) {
	for _, tc := range []struct {
		name string
		rt   func() http.RoundTripper
	}{
		{"own_client", func() http.RoundTripper { return nil }},
		{"net_http", func() http.RoundTripper { return NewTransport() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rg := newRig(t, &Options{Transport: tc.rt(), Timeout: 300 * time.Millisecond})
			got := rg.post(t, viewer, call(`1`, "get_customer_record", ""), "Connection", "X-Drop", "X-Drop", "1")
			if got.status != http.StatusOK || !strings.Contains(got.body, `"tool":"get_customer_record"`) {
				t.Fatalf("call: %d %s", got.status, got.body)
			}
			if got.header.Get("Keep-Alive") != "" || got.header.Get("Mcp-Session-Id") != "sess-1" {
				t.Errorf("response header %v", got.header)
			}
			log := rg.down.log()
			if h := log[0].Header; h.Get("X-Drop") != "" || h.Get(HeaderSubject) != "viewer" || h.Get("Authorization") != "" {
				t.Errorf("downstream header %v", h)
			}
			if log[0].Host != strings.TrimPrefix(rg.dsrv.URL, "http://") {
				t.Errorf("Host %q", log[0].Host)
			}
			got = rg.post(t, viewer, call(`2`, "stream", ""))
			if got.status != http.StatusOK || !strings.Contains(got.body, "id: 2") || got.header.Get("Content-Type") != "text/event-stream" {
				t.Errorf("stream: %d %v %s", got.status, got.header, got.body)
			}
			got = rg.post(t, viewer, call(`3`, "slow", ""))
			if _, code, _ := rpcErr(t, got.body); got.status != http.StatusGatewayTimeout || code != CodeUpstreamUnavailable {
				t.Errorf("slow: %d %s", got.status, got.body)
			}
			got = rg.post(t, viewer, `[`+call(`4`, "a", "")+`,`+call(`5`, "b", "")+`]`)
			if got.status != http.StatusOK || !strings.Contains(got.body, `"tool":"a"`) || !strings.Contains(got.body, `"tool":"b"`) {
				t.Errorf("batch: %d %s", got.status, got.body)
			}
			// After the timeout the gateway still answers.
			got = rg.post(t, viewer, call(`6`, "get_customer_record", ""))
			if got.status != http.StatusOK {
				t.Errorf("after timeout: %d %s", got.status, got.body)
			}
		})
	}
}

// TestIdleTimeoutBetweenPieces checks that Options.Timeout bounds every
// silence of a POST's answer, not its whole length: a stream whose pieces
// come closer than the timeout is relayed to its end however long it lasts,
// and one that falls silent longer is cut.
func TestIdleTimeoutBetweenPieces(t *testing.T) {
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		// Gaps of 150 ms under a timeout of 500 ms, lasting 600 ms in all:
		// room for a loaded host (60 ms under 200 ms failed at a load of 17).
		gap := 150 * time.Millisecond
		if r.URL.Query().Get("stall") != "" {
			gap = 2 * time.Second
		}
		for i := range 5 {
			if i > 0 {
				select {
				case <-time.After(gap):
				case <-r.Context().Done():
					return
				}
			}
			io.WriteString(w, "data: {\"piece\":"+string(rune('0'+i))+"}\n\n")
			w.(http.Flusher).Flush()
		}
	}))
	for _, tc := range []struct {
		name   string
		query  string
		pieces int
	}{
		{"steady_stream_outlasts_timeout", "", 5},
		{"silence_longer_than_timeout", "?stall=1", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := New(down.URL+"/mcp"+tc.query, DemoTokens(), &Options{Logger: discardLogger(), Timeout: 500 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			rg := &rig{url: newServer(t, g).URL}
			start := time.Now()
			got := rg.post(t, viewer, call(`1`, "echo", ""))
			if n := strings.Count(got.body, "data: "); got.status != http.StatusOK || n != tc.pieces {
				t.Errorf("%d pieces (status %d), want %d: %q", n, got.status, tc.pieces, got.body)
			}
			if d := time.Since(start); tc.pieces == 1 && d > 1500*time.Millisecond {
				t.Errorf("silence cut after %v", d)
			}
		})
	}
}

// TestShortAnswerStaysShort checks that a downstream answer cut before its
// Content-Length reaches the client as cut, not as a complete answer.
func TestShortAnswerStaysShort(t *testing.T) {
	url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.ReadAll(req.Body)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{\"jsonrpc\":\"2.0\",")
	})
	g, err := New(url+"/mcp", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(call(`1`, "echo", "")))
	req.Header.Set("Authorization", viewer)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Errorf("a cut answer read as complete: %q (Content-Length %d)", b, resp.ContentLength)
	}
}

// TestUpstreamClientRetry checks what is sent again when a reused
// connection closes before any answer: a replayable request (GET, or a POST
// with an Idempotency-Key) once on a new connection, another POST never.
func TestUpstreamClientRetry(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for i := 0; ; i++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.ReadAll(req.Body)
			mu.Lock()
			seen = append(seen, req.Method+" "+req.URL.Path)
			mu.Unlock()
			if i == 1 {
				return // the second request of a connection: closed unanswered
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	for _, tc := range []struct {
		name   string
		method string
		key    bool
		ok     bool
		want   []string
	}{
		{"get_sent_again", "GET", false, true, []string{"GET /first", "GET /second", "GET /second"}},
		// An Idempotency-Key from the client does not make a POST replayable:
		// an MCP server does not deduplicate on it.
		{"post_with_key_not_sent_again", "POST", true, false, []string{"GET /first", "POST /second"}},
		{"post_not_sent_again", "POST", false, false, []string{"GET /first", "POST /second"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			c := newUpstreamClient()
			doGet(t, c, "GET", url+"/first", nil)
			req, _ := http.NewRequest(tc.method, url+"/second", strings.NewReader("x"))
			if tc.key {
				req.Header.Set("Idempotency-Key", "k1")
			}
			resp, err := c.RoundTrip(req)
			if tc.ok {
				if err != nil {
					t.Fatalf("not sent again: %v", err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != "ok" {
					t.Errorf("answer %q", b)
				}
			} else if err == nil {
				t.Fatal("a POST was answered by a server that never answered it")
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(tc.want, seen); diff != "" {
				t.Errorf("requests seen (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUpstreamRefusesInvalidFieldNames checks that the gateway's own client
// sends only field names that are tokens (RFC 9110 §5.6.2): every byte of
// a name is checked, and a name with a space, a delimiter, a control or a
// non-ASCII byte is refused before anything is sent.
func TestUpstreamRefusesInvalidFieldNames(t *testing.T) {
	const delimiters = `"(),/:;<=>?@[\]{}`
	for b := 0; b < 256; b++ {
		want := b > ' ' && b < 0x7f && !strings.ContainsRune(delimiters, rune(b))
		for _, name := range []string{string([]byte{byte(b)}), "X-" + string([]byte{byte(b)}) + "-Y"} {
			if got := validFieldName(name); got != want {
				t.Errorf("validFieldName(%q) = %v, want %v", name, got, want)
			}
		}
	}
	c := newUpstreamClient()
	for _, name := range []string{"", "X Name", "X-\u00e9", "X:Y", "X\r\nY"} {
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/mcp", nil)
		req.Header[name] = []string{"v"}
		if _, err := c.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "invalid header field name") {
			t.Errorf("RoundTrip with header name %q: err %v, want an invalid header field name", name, err)
		}
	}
}

// TestLookedUpHeadersCanonical checks that every header name the gateway
// looks up in a map directly (headerValue, h[k]) is in canonical form: a
// key spelled otherwise would never match a header net/http parsed, and a
// header the gateway checks would go unseen.
func TestLookedUpHeadersCanonical(t *testing.T) {
	for _, k := range []string{hdrSession, "Content-Type", "Mcp-Method", "Mcp-Name", "Mcp-Protocol-Version", "Authorization", "Connection"} {
		if c := textproto.CanonicalMIMEHeaderKey(k); c != k {
			t.Errorf("%q is looked up directly but its canonical form is %q", k, c)
		}
	}
}
