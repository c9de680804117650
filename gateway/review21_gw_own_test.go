//go:build unix

package gateway

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ownAnswerRig is a gateway with opts (its Timeout 300 ms unless set) on
// a listener with the least socket buffers, in front of down (nil: a
// downstream that is not there). done gets a value when the gateway's
// handler returns.
type ownAnswerRig struct {
	addr string
	done chan struct{}
}

func newOwnAnswerRig(t *testing.T, opts Options, down http.Handler) *ownAnswerRig {
	t.Helper()
	upstream := "http://127.0.0.1:1/mcp" // nothing listens there
	if down != nil {
		upstream = newServer(t, down).URL + "/mcp"
	}
	if opts.Timeout == 0 {
		opts.Timeout = 300 * time.Millisecond
	}
	opts.Logger = discardLogger()
	g, err := New(upstream, DemoTokens(), &opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := (&net.ListenConfig{Control: smallBuffers}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &ownAnswerRig{addr: ln.Addr().String(), done: make(chan struct{}, 8)}
	gw := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { s.done <- struct{}{} }()
		g.ServeHTTP(w, r)
	}))
	gw.Listener = ln
	gw.Start()
	t.Cleanup(gw.Close)
	return s
}

// send sends body on a new connection whose receive buffer is 4 KiB, with
// the header lines hdr (each "Name: value"), and returns the connection.
func (s *ownAnswerRig) send(t *testing.T, body string, hdr ...string) net.Conn {
	t.Helper()
	c := dialSmall(t, s.addr, 4096)
	var b strings.Builder
	b.WriteString("POST /mcp HTTP/1.1\r\nHost: " + s.addr + "\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n")
	for _, h := range hdr {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n" + body)
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	return c
}

// dialSmall dials addr with a receive buffer of rcvbuf bytes; the
// connection is closed at the test's end.
func dialSmall(t *testing.T, addr string, rcvbuf int) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestReview21OwnAnswerStalledClient checks the gateway's own answers
// (refusals, 502) to a client that never reads them. They echo the
// request's id, which the client chooses and which may be as large as the
// body (MaxBodyBytes, 4 MiB by default): a write of such an answer to a
// client that does not read blocks, and without a bound holds the
// handler, the request's body buffer and the answer (and, for an answer
// refused after the downstream's, its connection) for as long as the
// client keeps its connection open; an unauthenticated client can do it.
// The write is bounded as a relayed answer's is: the handler returns.
func TestReview21OwnAnswerStalledClient(t *testing.T) {
	id := `"` + strings.Repeat("i", 1<<20) + `"` // far more than the buffers hold
	gzipped := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		io.WriteString(w, "not really gzip")
	})
	notJSON := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "not JSON")
	})
	list := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"}`
	for _, tc := range []struct {
		name string
		opts Options
		down http.Handler
		body string
		hdr  []string
	}{
		{"unauthenticated", Options{}, nil, call(id, "echo", ""), nil},
		{"forbidden", Options{}, nil, call(id, "admin_delete", ""), []string{"Authorization: " + viewer}},
		{"two_session_ids", Options{}, nil, call(id, "echo", ""),
			[]string{"Authorization: " + admin, "Mcp-Session-Id: a", "Mcp-Session-Id: b"}},
		{"upstream_unavailable", Options{}, nil, call(id, "echo", ""), []string{"Authorization: " + admin}},
		{"filter_unreadable", Options{FilterToolsList: true}, gzipped, list, []string{"Authorization: " + admin}},
		{"filter_not_json", Options{FilterToolsList: true}, notJSON, list, []string{"Authorization: " + admin}},
		{"pins_not_json", Options{Pins: TrustOnFirstUse()}, notJSON, call(id, "echo", ""), []string{"Authorization: " + admin}},
		// Written by the batch's guard (review20): a guard for it.
		{"batch_refused", Options{}, nil, "[" + call(id, "admin_delete", "") + "," + call(`2`, "admin_delete", "") + "]",
			[]string{"Authorization: " + viewer}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newOwnAnswerRig(t, tc.opts, tc.down)
			s.send(t, tc.body, tc.hdr...) // and read nothing
			select {
			case <-s.done:
			case <-time.After(8 * time.Second): // a busy machine under -race
				t.Fatalf("the gateway's handler still runs 8 s after a client stopped reading its %s answer (timeout 300 ms)", tc.name)
			}
		})
	}
}

// TestReview21OwnAnswerSlowReader checks that a client that reads a large
// own answer slowly, but steadily, gets all of it (384 KiB at 192 KiB/s,
// with a timeout of 2 s, for a busy machine). (The refusal is the
// viewer's of admin_delete: an unauthenticated request's body is read only
// up to 64 KiB, for its id.)
func TestReview21OwnAnswerSlowReader(t *testing.T) {
	id := `"` + strings.Repeat("i", 384<<10) + `"`
	s := newOwnAnswerRig(t, Options{Timeout: 2 * time.Second}, nil)
	c := s.send(t, call(id, "admin_delete", ""), "Authorization: "+viewer)
	resp, err := http.ReadResponse(bufio.NewReaderSize(&slowReader{r: c, start: time.Now()}, 16<<10), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), id) {
		t.Fatalf("answer %d, %d bytes, %v; want 403 with the whole id (%d bytes)", resp.StatusCode, len(b), err, len(id))
	}
}
