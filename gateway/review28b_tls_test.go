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
	ca := newTestCA(t, "server-ca")
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	srvCfg := &tls.Config{Certificates: []tls.Certificate{ca.issue(t, false, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))}}
	var conns atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	go func() {
		for {
			nc, err := raw.Accept()
			if err != nil {
				return
			}
			first := conns.Add(1) == 1
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
					io.Copy(io.Discard, req.Body)
					if first && n == 0 {
						// The answer, then a forged one in its own record,
						// both in one TCP write.
						hc.hold = true
						io.WriteString(tc, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA")
						io.WriteString(tc, "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled")
						if hc.flush() != nil {
							return
						}
						continue
					}
					io.WriteString(tc, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nC")
				}
			}()
		}
	}()
	c := newUpstreamClient()
	c.tlsConfig = &tls.Config{RootCAs: ca.pool}
	defer c.CloseIdleConnections()
	url := "https://" + raw.Addr().String() + "/mcp"
	for i, want := range []string{"A", "C"} {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(`{}`)))
		resp, err := c.RoundTrip(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if string(body) != want {
			t.Fatalf("request %d got %q, want %q: a record left in the TLS connection's buffer was taken for its answer", i, body, want)
		}
	}
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
