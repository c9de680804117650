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
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// stallRig is a gateway in mode (see inMode; "batch": two tools/calls in
// one batch) with timeout, on a listener with the least socket buffers, in
// front of a downstream that answers every call with an answer of size
// bytes (an event stream when sse). gwDone gets a value when the gateway's
// handler returns, downDone when the downstream's does; arrived counts the
// downstream's handlers that started.
type stallRig struct {
	addr, body       string
	calls            int
	gwDone, downDone chan struct{}
	arrived          atomic.Int32
}

func newStallRig(t *testing.T, mode string, sse bool, size int, timeout time.Duration) *stallRig {
	t.Helper()
	s := &stallRig{calls: 1, gwDone: make(chan struct{}, 1), downDone: make(chan struct{}, 2)}
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.arrived.Add(1)
		defer func() { s.downDone <- struct{}{} }()
		io.Copy(io.Discard, r.Body)
		msg := `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"pad":"` + strings.Repeat("a", size) + `"}}`
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			msg = "event: message\ndata: " + msg + "\n\n"
		} else {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(msg)))
		}
		io.WriteString(w, msg)
	}))
	o := Options{Timeout: timeout, Logger: discardLogger()}
	s.body = inMode(&o, mode)
	if mode == "batch" {
		s.body = "[" + call(`1`, "echo", "") + "," + call(`2`, "echo", "") + "]"
		s.calls = 2
	}
	g, err := New(down.URL+"/mcp", DemoTokens(), &o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := (&net.ListenConfig{Control: smallBuffers}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { s.gwDone <- struct{}{} }()
		g.ServeHTTP(w, r)
	}))
	gw.Listener = ln
	gw.Start()
	t.Cleanup(gw.Close)
	s.addr = ln.Addr().String()
	return s
}

// send sends the rig's call on a new connection whose receive buffer is
// rcvbuf bytes, and returns the connection.
func (s *stallRig) send(t *testing.T, rcvbuf int) net.Conn {
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
	c, err := d.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: "+s.addr+"\r\nAuthorization: Bearer admin-token\r\n"+
		"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Content-Length: "+strconv.Itoa(len(s.body))+"\r\n\r\n"+s.body)
	return c
}

// TestReview20StalledClientReleased checks a client that sends a call and
// then never reads its answer (its connection open, its receive window
// full): the gateway's write to it would block for as long as the client
// likes, holding the handler, the answer read so far (up to 64 MiB with
// Pins or FilterToolsList, or for a batch), the call's in-flight slot and,
// on the plain relay, the downstream's connection and handler. A write to
// the client that does not complete within the timeout ends the relay, as
// the client's going away does: the handler returns, and the downstream's
// answer is still read to its end.
func TestReview20StalledClientReleased(t *testing.T) {
	for _, mode := range []string{"plain", "pins", "filter", "batch"} {
		for _, sse := range []bool{false, true} {
			name := mode + "_json"
			if sse {
				name = mode + "_sse"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s := newStallRig(t, mode, sse, 2<<20, 300*time.Millisecond) // far more than the buffers hold
				s.send(t, 4096)                                             // and read nothing
				// 30 s: the handler ends about 300 ms after the client
				// stopped, but a busy machine under -race took over 3 s
				// (and over 10 s at a load average of 15); a handler that
				// waits on the client never ends.
				wait := time.NewTimer(30 * time.Second)
				defer wait.Stop()
				select {
				case <-s.gwDone:
				case <-wait.C:
					t.Fatalf("the gateway's handler still runs 30 s after a client stopped reading (timeout 300 ms)")
				}
				// Every call that reached the downstream ends there too.
				// A batch's second call does not always: when it is
				// late to start (a busy machine), the first's answer has
				// found its client gone by then, and it is not sent.
				for ended := int32(0); ended < s.arrived.Load(); ended++ {
					select {
					case <-s.downDone:
					case <-wait.C:
						t.Fatalf("%d of the %d calls that reached the downstream still run there after the gateway's handler returned", s.arrived.Load()-ended, s.arrived.Load())
					}
				}
				if n := s.arrived.Load(); n == 0 || n > int32(s.calls) {
					t.Fatalf("%d calls reached the downstream, want 1 to %d", n, s.calls)
				}
			})
		}
	}
}

// TestReview20SlowReaderNotCut checks that a client reading its answer
// slowly, but steadily, gets all of it: the timeout bounds a write that
// makes no progress, not the relay of an answer larger than what the
// client reads within the timeout (384 KiB read at 192 KiB/s here, with a
// timeout of 1 s).
func TestReview20SlowReaderNotCut(t *testing.T) {
	for _, mode := range []string{"plain", "pins", "filter", "batch"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			const size = 384 << 10
			s := newStallRig(t, mode, false, size, time.Second)
			c := s.send(t, 16<<10)
			br := bufio.NewReaderSize(&slowReader{r: c, start: time.Now()}, 16<<10)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK || len(b) < size*s.calls {
				t.Fatalf("answer %d, %d bytes, %v; want 200 and at least %d bytes", resp.StatusCode, len(b), err, size*s.calls)
			}
		})
	}
}

// slowReader reads at 192 KiB/s.
type slowReader struct {
	r     io.Reader
	start time.Time
	n     int
}

func (s *slowReader) Read(p []byte) (int, error) {
	time.Sleep(time.Until(s.start.Add(time.Duration(s.n) * time.Second / (192 << 10))))
	k, err := s.r.Read(p[:min(len(p), 8<<10)])
	s.n += k
	return k, err
}
