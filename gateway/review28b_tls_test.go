package gateway

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// holdConn buffers what is written to it while hold is set, so that TLS
// records written one after the other reach the peer in one TCP write.
type holdConn struct {
	net.Conn
	hold bool
	buf  bytes.Buffer
}

func (h *holdConn) Write(p []byte) (int, error) {
	if h.hold {
		return h.buf.Write(p)
	}
	return h.Conn.Write(p)
}

func (h *holdConn) flush() error {
	h.hold = false
	_, err := h.Conn.Write(h.buf.Bytes())
	h.buf.Reset()
	return err
}

// TestReview28bTLSLeftoverRecord: a downstream that sends, after a
// complete answer, another TLS record that arrives with it (here a forged
// second answer) leaves it read from the socket into the TLS connection's
// buffer, where neither the bufio.Reader nor the idle peek sees it. The
// connection must not be reused: the next request, another caller's, would
// get that record as its answer.
func TestReview28bTLSLeftoverRecord(t *testing.T) {
	addr, ca := tlsDownstream(t, func(conn int64, n int, _ *http.Request, hc *holdConn, tc *tls.Conn) error {
		if conn == 1 && n == 0 {
			// The answer, then a forged one in its own record, both in
			// one TCP write.
			_, err := hc.writeSplit(tc, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA",
				"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled", -1)
			return err
		}
		_, err := io.WriteString(tc, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nC")
		return err
	})
	tlsAnswers(t, addr, ca, "a record left in the TLS connection's buffer was taken for its answer", "A", "C")
}

// tlsDownstream serves HTTP/1.1 over TLS on 127.0.0.1, under a certificate
// of a new CA, answering the n-th request (from 0) of the conn-th
// connection (from 1) with answer, which writes to tc (through hc, which
// can hold what tc writes); an error ends the connection. It returns the
// address and the CA.
func tlsDownstream(t *testing.T, answer func(conn int64, n int, req *http.Request, hc *holdConn, tc *tls.Conn) error) (string, *testCA) {
	t.Helper()
	ca := newTestCA(t, "server-ca")
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srvCfg := &tls.Config{Certificates: []tls.Certificate{ca.issue(t, false, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))}}
	var conns atomic.Int64
	var wg sync.WaitGroup
	t.Cleanup(func() { raw.Close(); wg.Wait() })
	go func() {
		for {
			nc, err := raw.Accept()
			if err != nil {
				return
			}
			conn := conns.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				nc.SetDeadline(time.Now().Add(5 * time.Second))
				hc := &holdConn{Conn: nc}
				tc := tls.Server(hc, srvCfg)
				br := bufio.NewReader(tc)
				for n := 0; ; n++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					if answer(conn, n, req, hc, tc) != nil {
						return
					}
				}
			}()
		}
	}()
	return raw.Addr().String(), ca
}

// tlsAnswers posts to addr's /mcp with the upstream client, trusting ca,
// one request for each of want in turn on its pool, and fails with why
// unless the i-th answer's body is want[i].
func tlsAnswers(t *testing.T, addr string, ca *testCA, why string, want ...string) {
	t.Helper()
	c := newUpstreamClient()
	c.tlsConfig = &tls.Config{RootCAs: ca.pool}
	defer c.CloseIdleConnections()
	for i, w := range want {
		req, _ := http.NewRequest(http.MethodPost, "https://"+addr+"/mcp", bytes.NewReader([]byte(`{}`)))
		resp, err := c.RoundTrip(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if string(body) != w {
			t.Fatalf("request %d got %q, want %q: %s", i, body, w, why)
		}
	}
}

// writeSplit writes first and second through tc in one TCP write, but for
// all of second's TLS bytes after its first keep (all of them when keep is
// negative), which it returns, to be written later.
func (h *holdConn) writeSplit(tc *tls.Conn, first, second string, keep int) (rest []byte, err error) {
	h.hold = true
	io.WriteString(tc, first)
	n := h.buf.Len()
	io.WriteString(tc, second)
	all := bytes.Clone(h.buf.Bytes())
	h.buf.Reset()
	h.hold = false
	if keep >= 0 {
		all, rest = all[:n+keep], all[n+keep:]
	}
	_, err = h.Conn.Write(all)
	return rest, err
}

// TestReview28bTLSHandshakeHangs: a downstream that accepts the TCP
// connection but never answers the handshake fails the call within
// Options.Timeout, and the downstream gets one connection (no retry).
func TestReview28bTLSHandshakeHangs(t *testing.T) {
	ca := newTestCA(t, "server-ca")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int64
	var held []net.Conn
	var mu sync.Mutex
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			mu.Lock()
			held = append(held, nc)
			mu.Unlock()
		}
	}()
	g, err := New("https://"+ln.Addr().String()+"/mcp", DemoTokens(), &Options{
		TLSConfig: &tls.Config{RootCAs: ca.pool}, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{url: newServer(t, g).URL}
	start := time.Now()
	r := rg.post(t, viewer, call("1", "get_refund", `{}`))
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the call took %v: the handshake is not bounded by Timeout", d)
	}
	if r.status < 500 {
		t.Fatalf("got %d %s, want an upstream error", r.status, r.body)
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}
