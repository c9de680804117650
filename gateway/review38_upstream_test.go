package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// review38Body is a request body that gives out its pieces one Read at a
// time, then err (io.EOF when nil), and records that it was closed.
type review38Body struct {
	pieces []string
	err    error
	closed bool
}

func (b *review38Body) Read(p []byte) (int, error) {
	if len(b.pieces) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		return 0, io.EOF
	}
	n := copy(p, b.pieces[0])
	if b.pieces[0] = b.pieces[0][n:]; b.pieces[0] == "" {
		b.pieces = b.pieces[1:]
	}
	return n, nil
}

func (b *review38Body) Close() error {
	b.closed = true
	return nil
}

// review38Write returns what writeRequest writes for req with body, and its
// error.
func review38Write(t *testing.T, req *http.Request, body io.ReadCloser) (string, error) {
	t.Helper()
	var b bytes.Buffer
	err := writeRequest(bufio.NewWriter(&b), req, body)
	return b.String(), err
}

// TestReview38WriteRequestWire pins the exact bytes the gateway's own client
// writes for a request: the Host it was given, a Content-Length for a body
// of known length (in decimal), chunked framing (sizes in hex) for one of
// unknown length, "Content-Length: 0" only for a POST, PUT or PATCH without
// a body, "Connection: close" when the request asks for it, and no framing
// header of the caller's. A downstream reads its requests by these bytes:
// a wrong length or chunk size runs one request's body into the next, and
// a body length on a GET is one a strict server refuses.
func TestReview38WriteRequestWire(t *testing.T) {
	const url = "http://127.0.0.1:1/mcp?x=1"
	const head = " /mcp?x=1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n"
	for _, tc := range []struct {
		name   string
		method string
		host   string // "": as http.NewRequest sets it; "-": empty
		length int64
		body   []string // nil: no body
		noBody bool     // http.NoBody as the body
		close  bool
		header http.Header
		want   string
	}{
		{name: "get_without_body", method: "GET", want: "GET" + head + "\r\n"},
		{name: "empty_method_is_get", method: "", want: "GET" + head + "\r\n"},
		{name: "delete_without_body", method: "DELETE", want: "DELETE" + head + "\r\n"},
		{name: "post_without_body", method: "POST", want: "POST" + head + "Content-Length: 0\r\n\r\n"},
		{name: "put_without_body", method: "PUT", want: "PUT" + head + "Content-Length: 0\r\n\r\n"},
		{name: "patch_without_body", method: "PATCH", want: "PATCH" + head + "Content-Length: 0\r\n\r\n"},
		{name: "post_no_body", method: "POST", noBody: true, want: "POST" + head + "Content-Length: 0\r\n\r\n"},
		{
			name: "host_of_the_request", method: "GET", host: "example.test",
			want: "GET /mcp?x=1 HTTP/1.1\r\nHost: example.test\r\n\r\n",
		},
		{name: "empty_host_is_the_urls", method: "GET", host: "-", want: "GET" + head + "\r\n"},
		{
			name: "one_byte_body", method: "POST", length: 1, body: []string{"x"},
			want: "POST" + head + "Content-Length: 1\r\n\r\nx",
		},
		{
			name: "eleven_byte_body", method: "POST", length: 11, body: []string{"hello", " world"},
			want: "POST" + head + "Content-Length: 11\r\n\r\nhello world",
		},
		{
			name: "body_past_its_length_cut", method: "POST", length: 3, body: []string{"abcdef"},
			want: "POST" + head + "Content-Length: 3\r\n\r\nabc",
		},
		{
			name: "unknown_length_chunked", method: "POST", length: 0,
			body: []string{"a", strings.Repeat("b", 20), strings.Repeat("c", 300)},
			want: "POST" + head + "Transfer-Encoding: chunked\r\n\r\n" +
				"1\r\na\r\n14\r\n" + strings.Repeat("b", 20) + "\r\n12c\r\n" + strings.Repeat("c", 300) + "\r\n0\r\n\r\n",
		},
		{
			name: "negative_length_chunked", method: "POST", length: -1, body: []string{"abc"},
			want: "POST" + head + "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		},
		{
			name: "empty_unknown_length_body", method: "POST", length: 0, body: []string{},
			want: "POST" + head + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		},
		{name: "close", method: "GET", close: true, want: "GET" + head + "Connection: close\r\n\r\n"},
		{
			name: "callers_framing_headers_dropped", method: "POST", length: 2, body: []string{"ok"},
			header: http.Header{
				"Host": {"evil.test"}, "Content-Length": {"100"}, "Transfer-Encoding": {"chunked"},
				"Connection": {"keep-alive"}, "Trailer": {"X-T"},
			},
			want: "POST" + head + "Content-Length: 2\r\n\r\nok",
		},
		{
			name: "header_as_given", method: "GET", header: http.Header{"X-A": {"v 1", "\u00e9"}},
			want: "GET" + head + "X-A: v 1\r\nX-A: \u00e9\r\n\r\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Method = tc.method
			switch tc.host {
			case "":
			case "-":
				req.Host = ""
			default:
				req.Host = tc.host
			}
			req.ContentLength = tc.length
			req.Close = tc.close
			if tc.header != nil {
				req.Header = tc.header
			}
			var body io.ReadCloser
			var rb *review38Body
			if tc.body != nil {
				rb = &review38Body{pieces: tc.body}
				body = rb
			} else if tc.noBody {
				body = http.NoBody
			}
			got, err := review38Write(t, req, body)
			if err != nil {
				t.Fatalf("writeRequest(%s %s, length %d): %v", tc.method, url, tc.length, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("writeRequest(%s %s, length %d) wrote (-want +got):\n%s", tc.method, url, tc.length, diff)
			}
			if rb != nil && !rb.closed {
				t.Errorf("writeRequest(%s %s, length %d): body not closed", tc.method, url, tc.length)
			}
		})
	}
}

// TestReview38WriteRequestBodyFails pins that a request whose body ends
// short of its Content-Length, or fails, is an error and that not a byte of
// it is written: a downstream sent a head and part of a body would wait for
// the rest, or take the next request's bytes for it. The body is closed
// all the same, as a RoundTripper must.
func TestReview38WriteRequestBodyFails(t *testing.T) {
	errBroken := errors.New("broken body")
	for _, tc := range []struct {
		name    string
		length  int64
		body    *review38Body
		wantErr string
	}{
		{
			name: "short_of_its_length", length: 10, body: &review38Body{pieces: []string{"abcde"}},
			wantErr: "gateway: request body has 5 bytes, Content-Length 10",
		},
		{
			name: "known_length_fails", length: 10, body: &review38Body{pieces: []string{"abc"}, err: errBroken},
			wantErr: errBroken.Error(),
		},
		{
			name: "chunked_fails", length: 0, body: &review38Body{pieces: []string{"abc"}, err: errBroken},
			wantErr: errBroken.Error(),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/mcp", nil)
			req.ContentLength = tc.length
			got, err := review38Write(t, req, tc.body)
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("writeRequest(length %d, body %q): err %v, want %q", tc.length, tc.body.pieces, err, tc.wantErr)
			}
			if got != "" {
				t.Errorf("writeRequest(length %d): wrote %q, want nothing", tc.length, got)
			}
			if !tc.body.closed {
				t.Errorf("writeRequest(length %d): body not closed", tc.length)
			}
		})
	}
}

// TestReview38ValidFieldValueEveryByte pins validFieldValue on every byte,
// inside a value and as its first byte: controls other than tab and DEL are
// refused wherever they are (a CR or LF as the first byte smuggles a header
// as surely as one in the middle), a leading space or tab is refused, and
// bytes from 0x80 up, as UTF-8 is sent, pass.
func TestReview38ValidFieldValueEveryByte(t *testing.T) {
	for b := range 256 {
		ok := b >= ' ' && b != 0x7f || b == '\t'
		for _, tc := range []struct {
			v    string
			want bool
		}{
			{"a" + string([]byte{byte(b)}) + "a", ok},
			{string([]byte{byte(b)}) + "a", ok && b != ' ' && b != '\t'},
		} {
			if got := validFieldValue(tc.v); got != tc.want {
				t.Errorf("validFieldValue(%q) = %v, want %v", tc.v, got, tc.want)
			}
		}
	}
}

// TestReview38TargetSchemeChange pins that the upstream client's cache of
// its last URL's target is keyed on the scheme as well as the host: after
// a request to http://host:port, one to ftp://host:port is refused and one
// to https://host:port is not sent in clear text on the pooled http
// connection. A request meant for TLS must never go out unencrypted.
func TestReview38TargetSchemeChange(t *testing.T) {
	s := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "plain")
	}))
	hostPort := strings.TrimPrefix(s.URL, "http://")
	c := newUpstreamClient()
	defer c.CloseIdleConnections()
	if _, body := doGet(t, c, http.MethodGet, s.URL+"/mcp", nil); body != "plain" {
		t.Fatalf("GET %s/mcp: %q, want %q", s.URL, body, "plain")
	}
	for _, tc := range []struct {
		name, url, wantErr string
	}{
		{"ftp_refused", "ftp://" + hostPort + "/mcp", `unsupported scheme "ftp"`},
		{"https_not_sent_in_clear", "https://" + hostPort + "/mcp", "TLS handshake"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, tc.url, nil)
			resp, err := c.RoundTrip(req)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				t.Fatalf("GET %s after GET %s: answered %q, want an error", tc.url, s.URL, b)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("GET %s after GET %s: err %v, want one with %q", tc.url, s.URL, err, tc.wantErr)
			}
		})
	}
}

// review38Server is a downstream on 127.0.0.1 that reads each request of
// each connection and answers it with answer(n, req), n counting the
// requests of the connection from 0; an empty answer closes the
// connection unanswered, review38Reset resets it. It records every request
// seen ("METHOD /path body") and counts its connections.
type review38Server struct {
	url   string
	conns atomic.Int64
	mu    sync.Mutex
	seen  []string
}

// review38Reset is the answer that resets the connection (RST); an answer
// ending in review38Close is written, then the connection closed.
const (
	review38Reset = "\x00reset"
	review38Close = "\x00close"
)

func review38Serve(t *testing.T, answer func(n int, req *http.Request) string) *review38Server {
	t.Helper()
	s := &review38Server{}
	s.url = rawServer(t, func(c net.Conn, br *bufio.Reader) {
		s.conns.Add(1)
		for n := 0; ; n++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			b, _ := io.ReadAll(req.Body)
			s.mu.Lock()
			s.seen = append(s.seen, strings.TrimSpace(req.Method+" "+req.URL.Path+" "+string(b)))
			s.mu.Unlock()
			a := answer(n, req)
			if a == review38Reset {
				c.(*net.TCPConn).SetLinger(0)
				return
			}
			a, closeAfter := strings.CutSuffix(a, review38Close)
			if _, err := io.WriteString(c, a); err != nil || a == "" || closeAfter {
				return
			}
		}
	})
	return s
}

// requests returns the requests seen so far.
func (s *review38Server) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

const review38OK = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

// review38Read reads resp's body to its end and closes it.
func review38Read(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return string(b)
}

// TestReview38RoundTripRetry pins which requests the gateway's own client
// sends again, once, when a reused connection is closed or reset before
// a byte of answer: one without a body, with http.NoBody, or whose body
// can be had again (GetBody), and a GET; never a POST that was sent, nor
// a GET answered something malformed. A body that failed before a byte was
// sent is had again and sent, even in a POST (without GetBody the request
// fails), and a GetBody that fails ends the request with its error. A
// request lost this way would fail a client's listen stream for nothing;
// a POST sent twice runs a tools/call twice.
func TestReview38RoundTripRetry(t *testing.T) {
	errMalformed := errors.New("malformed")
	errGetBody := errors.New("no body again")
	errRead := errors.New("body read failed")
	for _, tc := range []struct {
		name    string
		end     string // how the second request of a connection ends
		method  string
		body    func() io.ReadCloser // the request's Body; nil: none
		getBody func() (io.ReadCloser, error)
		length  int64
		pooled  int // idle connections before /second; 0: 1
		want    []string
		wantErr error // nil: answered "ok"
	}{
		{
			name: "get_without_body_closed", end: "", method: "GET",
			want: []string{"GET /first", "GET /second", "GET /second"},
		},
		{
			name: "get_without_body_reset", end: review38Reset, method: "GET",
			want: []string{"GET /first", "GET /second", "GET /second"},
		},
		{
			name: "get_with_nobody", end: "", method: "GET",
			body: func() io.ReadCloser { return http.NoBody },
			want: []string{"GET /first", "GET /second", "GET /second"},
		},
		{
			name: "get_body_had_again", end: "", method: "GET", length: 1,
			body:    func() io.ReadCloser { return io.NopCloser(strings.NewReader("x")) },
			getBody: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("x")), nil },
			want:    []string{"GET /first", "GET /second x", "GET /second x"},
		},
		{
			name: "get_body_not_had_again", end: "", method: "GET", length: 1,
			body:    func() io.ReadCloser { return io.NopCloser(strings.NewReader("x")) },
			getBody: func() (io.ReadCloser, error) { return nil, errGetBody },
			want:    []string{"GET /first", "GET /second x"},
			wantErr: errGetBody,
		},
		{
			name: "post_reset_not_sent_again", end: review38Reset, method: "POST", length: 1,
			body:    func() io.ReadCloser { return io.NopCloser(strings.NewReader("x")) },
			getBody: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("x")), nil },
			want:    []string{"GET /first", "POST /second x"},
			wantErr: syscall.ECONNRESET,
		},
		{
			name: "post_body_failed_unsent_sent_once", end: "", method: "POST", length: 1,
			body:    func() io.ReadCloser { return &review38Body{err: errRead} },
			getBody: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("y")), nil },
			want:    []string{"GET /first", "POST /second y"},
		},
		{
			name: "post_body_failed_without_getbody", end: "", method: "POST", length: 1,
			body:    func() io.ReadCloser { return &review38Body{err: errRead} },
			want:    []string{"GET /first"},
			wantErr: errRead,
		},
		{
			name: "get_malformed_answer_not_sent_again", end: "XYZ\r\n" + review38Close, method: "GET",
			want:    []string{"GET /first", "GET /second"},
			wantErr: errMalformed,
		},
		{
			name: "get_sent_again_once_only", end: "", method: "GET", pooled: 2,
			want:    []string{"GET /first", "GET /first", "GET /second", "GET /second"},
			wantErr: io.ErrUnexpectedEOF,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := review38Serve(t, func(n int, _ *http.Request) string {
				if n == 1 {
					return tc.end
				}
				return review38OK
			})
			c := newUpstreamClient()
			defer c.CloseIdleConnections()
			var firsts []*http.Response
			for range max(tc.pooled, 1) { // at once: one connection each
				req, _ := http.NewRequest(http.MethodGet, s.url+"/first", nil)
				resp, err := c.RoundTrip(req)
				if err != nil {
					t.Fatalf("GET /first: %v", err)
				}
				firsts = append(firsts, resp)
			}
			for _, resp := range firsts {
				review38Read(t, resp)
			}
			req, _ := http.NewRequest(tc.method, s.url+"/second", nil)
			if tc.body != nil {
				req.Body = tc.body()
			}
			req.GetBody, req.ContentLength = tc.getBody, tc.length
			resp, err := c.RoundTrip(req)
			switch {
			case tc.wantErr == nil && err != nil:
				t.Errorf("%s /second: %v, want it answered", tc.method, err)
			case tc.wantErr == nil:
				if got := review38Read(t, resp); got != "ok" {
					t.Errorf("%s /second: answered %q, want %q", tc.method, got, "ok")
				}
			case tc.wantErr == errMalformed:
				if me := (*malformedError)(nil); !errors.As(err, &me) {
					t.Errorf("%s /second: err %v, want a malformed answer", tc.method, err)
				}
			case !errors.Is(err, tc.wantErr):
				t.Errorf("%s /second: err %v, want %v", tc.method, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, s.requests()); diff != "" {
				t.Errorf("%s /second: requests seen (-want +got):\n%s", tc.method, diff)
			}
		})
	}
}

// TestReview38RoundTripClosesBody pins that the gateway's own client closes
// a request's body whatever becomes of the request: refused for its URL,
// its Host or a header, not sent for a dial error, failed, or answered
// (http.RoundTripper's contract). A body left open can hold a file or the
// client's connection.
func TestReview38RoundTripClosesBody(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := ln.Addr().String()
	ln.Close()
	s := review38Serve(t, func(_ int, req *http.Request) string {
		if req.URL.Path == "/unanswered" {
			return ""
		}
		return review38OK
	})
	for _, tc := range []struct {
		name, url string
		mod       func(*http.Request)
		answered  bool
	}{
		{name: "bad_scheme", url: "ftp://127.0.0.1:1/"},
		{name: "no_host", url: "http://:1/"},
		{name: "invalid_host", url: s.url, mod: func(r *http.Request) { r.Host = "a b" }},
		{name: "invalid_header", url: s.url, mod: func(r *http.Request) { r.Header["X-A"] = []string{"a\nb"} }},
		{name: "dial_error", url: "http://" + closedAddr + "/"},
		{name: "unanswered", url: s.url + "/unanswered"},
		{name: "answered", url: s.url + "/", answered: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &review38Body{pieces: []string{"x"}}
			req, err := http.NewRequest(http.MethodPost, tc.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Body, req.ContentLength = body, 1
			if tc.mod != nil {
				tc.mod(req)
			}
			resp, err := newUpstreamClient().RoundTrip(req)
			if tc.answered != (err == nil) {
				t.Fatalf("POST %s: err %v, want answered %v", tc.url, err, tc.answered)
			}
			if err == nil {
				review38Read(t, resp)
			}
			if !body.closed {
				t.Errorf("POST %s: request body not closed", tc.url)
			}
		})
	}
}

// TestReview38RoundTripRefusesHost pins the Host values the gateway's own
// client refuses to send: any with a control character (a CR or LF would
// smuggle a header, wherever it is, the first byte included), a space or
// DEL. A Host in UTF-8 passes, as net/http's does after its own checks.
func TestReview38RoundTripRefusesHost(t *testing.T) {
	s := review38Serve(t, func(int, *http.Request) string { return review38OK })
	for _, tc := range []struct {
		name, host string
		ok         bool
	}{
		{"first_byte_lf", "\nX-Evil: 1", false},
		{"first_byte_nul", "\x00h", false},
		{"space", "h h", false},
		{"last_byte_tab", "h\t", false},
		{"del", "h\x7f", false},
		{"utf8", "h\u00e9", true},
		{"plain", "example.test", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, s.url, nil)
			req.Host = tc.host
			resp, err := newUpstreamClient().RoundTrip(req)
			if err == nil {
				review38Read(t, resp)
			}
			if got := err == nil; got != tc.ok {
				t.Errorf("GET with Host %q: err %v, want sent %v", tc.host, err, tc.ok)
			}
		})
	}
	if n := s.conns.Load(); n != 2 {
		t.Errorf("%d connections opened, want 2 (one per Host sent)", n)
	}
}

// TestReview38ConnectionCloseHonoured pins that the gateway's own client
// does not use a connection again after a Connection: close, the
// downstream's or its own, even when the downstream leaves the connection
// open, and even when the answer announces a Keep-Alive timeout too; other
// answers are kept. A downstream that said close is about to close: a
// request sent on it could be lost.
func TestReview38ConnectionCloseHonoured(t *testing.T) {
	for _, tc := range []struct {
		name      string
		header    string
		reqClose  bool
		wantConns int64
	}{
		{name: "plain_kept", wantConns: 1},
		{name: "keep_alive_kept", header: "Keep-Alive: timeout=30\r\n", wantConns: 1},
		{name: "answer_close", header: "Connection: close\r\n", wantConns: 2},
		{name: "answer_close_with_keep_alive", header: "Connection: close\r\nKeep-Alive: timeout=30\r\n", wantConns: 2},
		{name: "request_close", reqClose: true, wantConns: 2},
		{name: "request_close_keep_alive_answer", header: "Keep-Alive: timeout=30\r\n", reqClose: true, wantConns: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := review38Serve(t, func(int, *http.Request) string {
				return "HTTP/1.1 200 OK\r\n" + tc.header + "Content-Length: 2\r\n\r\nok"
			})
			c := newUpstreamClient()
			defer c.CloseIdleConnections()
			for i := range 2 {
				req, _ := http.NewRequest(http.MethodGet, s.url, nil)
				req.Close = tc.reqClose && i == 0
				resp, err := c.RoundTrip(req)
				if err != nil {
					t.Fatalf("GET %d: %v", i, err)
				}
				if got := review38Read(t, resp); got != "ok" {
					t.Fatalf("GET %d: %q, want %q", i, got, "ok")
				}
			}
			if n := s.conns.Load(); n != tc.wantConns {
				t.Errorf("%d connections for two GETs, want %d", n, tc.wantConns)
			}
		})
	}
}

// TestReview38BodilessAnswerClosedUnreadKept pins that an answer without a
// body (204, an answer to HEAD) gives its connection back to the pool at
// once: closing its body unread, as the gateway does, does not close the
// connection, which the next request uses.
func TestReview38BodilessAnswerClosedUnreadKept(t *testing.T) {
	for _, tc := range []struct {
		name, method, answer string
	}{
		{"no_content", http.MethodPost, "HTTP/1.1 204 No Content\r\n\r\n"},
		{"head", http.MethodHead, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := review38Serve(t, func(int, *http.Request) string { return tc.answer })
			c := newUpstreamClient()
			defer c.CloseIdleConnections()
			for i := range 2 {
				req, _ := http.NewRequest(tc.method, s.url, nil)
				resp, err := c.RoundTrip(req)
				if err != nil {
					t.Fatalf("%s %d: %v", tc.method, i, err)
				}
				resp.Body.Close()
			}
			if n := s.conns.Load(); n != 1 {
				t.Errorf("%d connections for two %s answered %q, want 1", n, tc.method, tc.answer)
			}
		})
	}
}

// TestReview38InformationalAnswers pins how the gateway's own client reads
// the answers before the final one: 100 Continue and up to nine 103s are
// skipped, a tenth informational answer ends the request (a downstream
// cannot hold it forever with them), a 101 is refused, and the final
// answer's body is read without the header's size limit.
func TestReview38InformationalAnswers(t *testing.T) {
	const early = "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"
	big := strings.Repeat("b", 2<<20)
	s := review38Serve(t, func(_ int, req *http.Request) string {
		switch req.URL.Path {
		case "/continue":
			return "HTTP/1.1 100 Continue\r\n\r\n" + review38OK
		case "/nine":
			return strings.Repeat(early, 9) + review38OK
		case "/ten":
			return strings.Repeat(early, 10) + review38OK
		case "/switch":
			return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n"
		case "/big":
			return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(big), big)
		}
		return review38OK
	})
	for _, tc := range []struct {
		path, want, wantErr string
	}{
		{path: "/continue", want: "ok"},
		{path: "/nine", want: "ok"},
		{path: "/ten", wantErr: "too many informational responses"},
		{path: "/switch", wantErr: errUnsupported.Error()},
		{path: "/big", want: big},
	} {
		t.Run(strings.TrimPrefix(tc.path, "/"), func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, s.url+tc.path, nil)
			resp, err := newUpstreamClient().RoundTrip(req)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("GET %s: err %v, want %q", tc.path, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("GET %s: %v", tc.path, err)
			}
			if got := review38Read(t, resp); got != tc.want {
				t.Errorf("GET %s: %d bytes %.20q, want %d bytes %.20q", tc.path, len(got), got, len(tc.want), tc.want)
			}
		})
	}
}

// TestReview38Replayable pins which requests replayable lets the gateway's
// own client send again: bodiless or rewindable GET, HEAD, OPTIONS and
// TRACE, and the empty method (GET); no other method, and no request whose
// body cannot be had again.
func TestReview38Replayable(t *testing.T) {
	getBody := func() (io.ReadCloser, error) { return http.NoBody, nil }
	for _, tc := range []struct {
		method  string
		body    io.ReadCloser
		getBody func() (io.ReadCloser, error)
		want    bool
	}{
		{method: "", want: true},
		{method: "GET", want: true},
		{method: "HEAD", want: true},
		{method: "OPTIONS", want: true},
		{method: "TRACE", want: true},
		{method: "GET", body: http.NoBody, want: true},
		{method: "GET", body: io.NopCloser(strings.NewReader("x")), getBody: getBody, want: true},
		{method: "GET", body: io.NopCloser(strings.NewReader("x")), want: false},
		{method: "POST", want: false},
		{method: "POST", body: io.NopCloser(strings.NewReader("x")), getBody: getBody, want: false},
		{method: "PUT", want: false},
		{method: "PATCH", want: false},
		{method: "DELETE", want: false},
		{method: "CONNECT", want: false},
	} {
		r := &http.Request{Method: tc.method, Body: tc.body, GetBody: tc.getBody}
		if got := replayable(r); got != tc.want {
			t.Errorf("replayable(%q, body %v, GetBody %v) = %v, want %v",
				tc.method, tc.body != nil, tc.getBody != nil, got, tc.want)
		}
	}
}

// TestReview38ErrorKinds pins isDialError and isConnReset, which decide
// what an error of the gateway's own client says (a TLS downstream's
// refused connection is not called a failed handshake) and whether a
// request is sent again (a reset is a close).
func TestReview38ErrorKinds(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}}
	for _, tc := range []struct {
		name             string
		err              error
		dial, resetByPer bool
	}{
		{"dial_refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true, false},
		{"wrapped_dial", fmt.Errorf("x: %w", &net.OpError{Op: "dial", Err: errors.New("timeout")}), true, false},
		{"read_reset", reset, false, true},
		{"wrapped_reset", fmt.Errorf("x: %w", reset), false, true},
		{"read_eof", &net.OpError{Op: "read", Err: io.EOF}, false, false},
		{"not_net", errors.New("connection reset by peer"), false, false},
		{"tls_alert", tls.AlertError(42), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := isDialError(tc.err); got != tc.dial {
				t.Errorf("isDialError(%v) = %v, want %v", tc.err, got, tc.dial)
			}
			if got := isConnReset(tc.err); got != tc.resetByPer {
				t.Errorf("isConnReset(%v) = %v, want %v", tc.err, got, tc.resetByPer)
			}
		})
	}
}

// TestReview38TLSDialErrorNotHandshake pins the error of an https request
// to a port where nothing listens: the TCP dial's, not one blaming a TLS
// handshake that never began, which would send an operator after
// certificates instead of the downstream's address.
func TestReview38TLSDialErrorNotHandshake(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/mcp", nil)
	_, err = newUpstreamClient().RoundTrip(req)
	if err == nil || strings.Contains(err.Error(), "TLS handshake") || !isDialError(err) {
		t.Errorf("GET https://%s/mcp: err %v, want the dial's error", addr, err)
	}
}

// TestReview38CutBodyErrorSticks pins that an answer's body cut before its
// Content-Length fails every Read from then on with the same error, not
// io.EOF: a caller that reads again after the error must not take the cut
// answer for a complete one.
func TestReview38CutBodyErrorSticks(t *testing.T) {
	url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err == nil {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
		}
	})
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	resp, err := newUpstreamClient().RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if string(b) != "abc" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("ReadAll of a cut body: %q, %v; want %q, %v", b, err, "abc", io.ErrUnexpectedEOF)
	}
	for i := range 2 {
		if n, err := resp.Body.Read(make([]byte, 8)); n != 0 || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("Read %d after the error: %d, %v; want 0, %v", i, n, err, io.ErrUnexpectedEOF)
		}
	}
}

// TestReview38CanceledExchangeNotKept pins that a connection whose request's
// context ended while its answer was read is not used again, even when the
// answer was then read to its end (from what was already buffered): the
// context set a deadline in the past on the connection, and the next
// request sent on it would fail at once instead of being answered.
func TestReview38CanceledExchangeNotKept(t *testing.T) {
	s := review38Serve(t, func(int, *http.Request) string { return review38OK })
	c := newUpstreamClient()
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/first", nil)
	resp, err := c.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if got := review38Read(t, resp); got != "ok" {
		t.Fatalf("GET /first, canceled after its header: %q, want %q (buffered)", got, "ok")
	}
	if _, body := doGet(t, c, http.MethodGet, s.url+"/second", nil); body != "ok" {
		t.Errorf("GET /second: %q, want %q", body, "ok")
	}
	if n := s.conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2: the canceled one is not kept", n)
	}
}

// review38Closes is a downstream that answers every request with answer
// and reports on closed each connection the client closed (its read
// ended); it counts its connections.
func review38Closes(t *testing.T, answer string) (url string, closed <-chan struct{}, conns *atomic.Int64) {
	t.Helper()
	ch := make(chan struct{}, 16)
	conns = new(atomic.Int64)
	url = rawServer(t, func(c net.Conn, br *bufio.Reader) {
		conns.Add(1)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				ch <- struct{}{}
				return
			}
			io.Copy(io.Discard, req.Body)
			if _, err := io.WriteString(c, answer); err != nil {
				ch <- struct{}{}
				return
			}
		}
	})
	return url, ch, conns
}

// review38Wait waits for the downstream to see a connection closed, and
// fails the test if it does not within a long bound.
func review38Wait(t *testing.T, closed <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the downstream saw no connection closed", what)
	}
}

// TestReview38ConnectionsClosed pins that the gateway's own client closes
// the connections it does not keep: one whose answer's body was closed
// before its end, one whose exchange failed, and, with
// CloseIdleConnections, the idle ones (the next request dials anew). A
// connection neither kept nor closed holds a socket, and a slot of the
// downstream, until the process ends.
func TestReview38ConnectionsClosed(t *testing.T) {
	answer := "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789"
	t.Run("body_closed_early", func(t *testing.T) {
		url, closed, _ := review38Closes(t, answer)
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		resp, err := newUpstreamClient().RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Read(make([]byte, 2))
		resp.Body.Close()
		review38Wait(t, closed, "answer's body closed after 2 of 10 bytes")
	})
	t.Run("body_closed_before_it_came", func(t *testing.T) {
		// Nothing of the body is buffered when it is closed: the
		// connection is closed all the same, not kept with the body to
		// come on it.
		url, closed, _ := review38Closes(t, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n")
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		resp, err := newUpstreamClient().RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		review38Wait(t, closed, "answer's body closed before a byte of it came")
	})
	t.Run("failed_exchange", func(t *testing.T) {
		url, closed, _ := review38Closes(t, "XYZ\r\n\r\n")
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if _, err := newUpstreamClient().RoundTrip(req); err == nil {
			t.Fatalf("GET answered %q: no error", "XYZ")
		}
		review38Wait(t, closed, "GET answered something malformed")
	})
	t.Run("close_idle_connections", func(t *testing.T) {
		url, closed, conns := review38Closes(t, answer)
		c := newUpstreamClient()
		defer c.CloseIdleConnections()
		doGet(t, c, http.MethodGet, url, nil)
		c.CloseIdleConnections()
		review38Wait(t, closed, "CloseIdleConnections")
		doGet(t, c, http.MethodGet, url, nil)
		if n := conns.Load(); n != 2 {
			t.Errorf("%d connections, want 2: a new one after CloseIdleConnections", n)
		}
	})
}

// review38Key returns the pool key of url.
func review38Key(t *testing.T, url string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	u, err := splitURL(req)
	if err != nil {
		t.Fatalf("splitURL(%s): %v", url, err)
	}
	return hostKey(u)
}

// TestReview38PoolKeepsAtMostMaxIdle pins maxIdle: of the connections of
// requests that ran at once, the pool keeps maxIdle and closes the others
// when their answers end, so a burst does not leave a downstream with
// hundreds of idle connections held open.
func TestReview38PoolKeepsAtMostMaxIdle(t *testing.T) {
	url, closed, conns := review38Closes(t, review38OK)
	c := newUpstreamClient()
	c.maxIdle = 2
	defer c.CloseIdleConnections()
	var resps []*http.Response
	for i := range 3 { // three at once: three connections
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		resp, err := c.RoundTrip(req)
		if err != nil {
			t.Fatalf("GET %d: %v", i, err)
		}
		resps = append(resps, resp)
	}
	for _, resp := range resps {
		review38Read(t, resp)
	}
	review38Wait(t, closed, "three answers read with maxIdle 2")
	for i := range 4 {
		doGet(t, c, http.MethodGet, url, nil)
		if n := conns.Load(); n != 3 {
			t.Fatalf("GET %d after the burst: %d connections, want the 3 of the burst", i, n)
		}
	}
	key := review38Key(t, url)
	c.mu.Lock()
	n := len(c.pools[key].idle)
	c.mu.Unlock()
	if n != 2 {
		t.Errorf("%d idle connections, want maxIdle 2", n)
	}
}

// TestReview38IdleTimeout pins newUpstreamClient's idle timeout of 90 s,
// and that get takes a connection idle for less than the limit and closes
// one idle for it or longer.
func TestReview38IdleTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		idle time.Duration
		want bool
	}{
		{"under_limit_taken", 89 * time.Second, true},
		{"at_limit_closed", 90 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, closed, _ := review38Closes(t, review38OK)
			c := newUpstreamClient()
			defer c.CloseIdleConnections()
			doGet(t, c, http.MethodGet, url, nil)
			key := review38Key(t, url)
			c.mu.Lock()
			idleAt := c.pools[key].idle[0].idleAt
			c.mu.Unlock()
			pc := c.get(key, idleAt.Add(tc.idle))
			if got := pc != nil; got != tc.want {
				t.Fatalf("get %v after the connection went idle: got a connection %v, want %v", tc.idle, got, tc.want)
			}
			if pc != nil {
				pc.nc.Close()
			}
			review38Wait(t, closed, "connection closed")
		})
	}
}

// TestReview38TLSServerNameKept pins that the server name of the client's
// TLS configuration is the one the downstream's certificate is checked
// against, not the URL's host: a downstream reached by an address its
// certificate does not name (localhost here) is accepted under its name.
func TestReview38TLSServerNameKept(t *testing.T) {
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	t.Cleanup(s.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.URL, "https://"))
	url := "https://localhost:" + port + "/mcp"
	for _, tc := range []struct {
		name, serverName string
		ok               bool
	}{
		{"certificates_name", "example.com", true},
		{"urls_host", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newUpstreamClient()
			defer c.CloseIdleConnections()
			c.tlsConfig = s.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
			c.tlsConfig.ServerName = tc.serverName
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			resp, err := c.RoundTrip(req)
			if err == nil {
				review38Read(t, resp)
			}
			if got := err == nil; got != tc.ok {
				t.Errorf("GET %s with ServerName %q: err %v, want answered %v", url, tc.serverName, err, tc.ok)
			}
		})
	}
}

// TestReview38HeaderLimit pins the limit of 1 MiB on an answer's header: a
// header of 1.5 MiB is refused (errHeaderTooLarge), one of 900 KiB read.
// A downstream must not make the gateway buffer what it likes.
func TestReview38HeaderLimit(t *testing.T) {
	s := review38Serve(t, func(_ int, req *http.Request) string {
		n := 900 << 10
		if req.URL.Path == "/over" {
			n = 1536 << 10
		}
		return "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", n) + "\r\n" + "Content-Length: 2\r\n\r\nok"
	})
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"/under", true},
		{"/over", false},
	} {
		req, _ := http.NewRequest(http.MethodGet, s.url+tc.path, nil)
		resp, err := newUpstreamClient().RoundTrip(req)
		if err == nil {
			review38Read(t, resp)
		}
		if got := err == nil; got != tc.ok || !tc.ok && !errors.Is(err, errHeaderTooLarge) {
			t.Errorf("GET %s: err %v, want answered %v", tc.path, err, tc.ok)
		}
	}
}

// TestReview38TLSClosedErrorOnlyNewTLS pins when the gateway's own client
// blames a refused client certificate (tlsClosedError): only for a new TLS
// connection closed before a byte of answer. A reused TLS connection, a
// plain one, and a TLS answer whose header is too large fail with their own
// errors, so an operator is not sent after certificates that are fine.
func TestReview38TLSClosedErrorOnlyNewTLS(t *testing.T) {
	tlsServer := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/close":
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				c.Close()
			}
		case "/huge":
			w.Header().Set("X-Big", strings.Repeat("a", 2<<20))
		default:
			io.WriteString(w, "ok")
		}
	}))
	t.Cleanup(tlsServer.Close)
	plain := review38Serve(t, func(int, *http.Request) string { return "" })
	for _, tc := range []struct {
		name, first, url string
		blamed           bool
	}{
		{name: "new_tls_closed", url: tlsServer.URL + "/close", blamed: true},
		{name: "reused_tls_closed", first: tlsServer.URL + "/ok", url: tlsServer.URL + "/close"},
		{name: "new_tls_header_too_large", url: tlsServer.URL + "/huge"},
		{name: "new_plain_closed", url: plain.url + "/close"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newUpstreamClient()
			defer c.CloseIdleConnections()
			c.tlsConfig = tlsServer.Client().Transport.(*http.Transport).TLSClientConfig
			if tc.first != "" {
				if _, body := doGet(t, c, http.MethodGet, tc.first, nil); body != "ok" {
					t.Fatalf("GET %s: %q, want %q", tc.first, body, "ok")
				}
			}
			req, _ := http.NewRequest(http.MethodPost, tc.url, strings.NewReader("x"))
			_, err := c.RoundTrip(req)
			var tce *tlsClosedError
			if err == nil || errors.As(err, &tce) != tc.blamed {
				t.Errorf("POST %s: err %v, want an error blaming the certificate %v", tc.url, err, tc.blamed)
			}
		})
	}
}

// TestReview38BodyFailureFailsAtOnce pins that a request whose body fails
// before a byte of it was sent fails at once: the wait for an answer the
// downstream may have sent before a failed write (earlyAnswerWait) is for
// writes the connection failed, and there was none.
func TestReview38BodyFailureFailsAtOnce(t *testing.T) {
	s := review38Serve(t, func(int, *http.Request) string { return review38OK })
	errRead := errors.New("body read failed")
	req, _ := http.NewRequest(http.MethodPost, s.url, nil)
	req.Body, req.ContentLength = &review38Body{pieces: []string{"ab"}, err: errRead}, 10
	start := time.Now()
	_, err := newUpstreamClient().RoundTrip(req)
	if d := time.Since(start); !errors.Is(err, errRead) || d >= earlyAnswerWait/2 {
		t.Errorf("POST with a failing body: err %v after %v, want %v well under %v", err, d, errRead, earlyAnswerWait)
	}
}

// TestReview38WrittenPostNotSentAgain pins that a POST whose body the
// downstream stopped reading (it reset the reused connection after the
// request's head) fails with the connection's error, whether the body's
// length is known or it goes chunked, and is not sent again, though its
// body could be had again (GetBody): bytes of it went out, and the
// downstream may have acted on it.
func TestReview38WrittenPostNotSentAgain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		chunked bool
	}{
		{"known_length", false},
		{"chunked", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var seen []string
			url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
				for n := 0; ; n++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					mu.Lock()
					seen = append(seen, req.Method+" "+req.URL.Path)
					mu.Unlock()
					if n == 1 {
						// Closed with the body unread: a reset.
						c.(*net.TCPConn).SetLinger(0)
						return
					}
					io.Copy(io.Discard, req.Body)
					io.WriteString(c, review38OK)
				}
			})
			c := newUpstreamClient()
			defer c.CloseIdleConnections()
			doGet(t, c, http.MethodGet, url+"/first", nil)
			body := strings.Repeat("x", 16<<20)
			req, _ := http.NewRequest(http.MethodPost, url+"/second", strings.NewReader(body))
			if tc.chunked {
				req.Body, req.ContentLength = io.NopCloser(strings.NewReader(body)), 0
			}
			resp, err := c.RoundTrip(req)
			if err == nil {
				got := review38Read(t, resp)
				t.Fatalf("POST /second: answered %.20q, want the reset's error", got)
			}
			if ne := (*net.OpError)(nil); !errors.As(err, &ne) {
				t.Errorf("POST /second: err %v, want the connection's error", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff([]string{"GET /first", "POST /second"}, seen); diff != "" {
				t.Errorf("POST /second: requests seen (-want +got):\n%s", diff)
			}
		})
	}
}
