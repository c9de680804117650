package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// r64iPipes is a listener whose connections are net.Pipe ends, so that a
// server runs in a synctest bubble (its clock fake, its waits instant).
type r64iPipes struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *r64iPipes) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *r64iPipes) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *r64iPipes) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4107} }

// dial returns the client's end of a new connection.
func (l *r64iPipes) dial() net.Conn {
	c, s := net.Pipe()
	l.conns <- s
	return c
}

// TestReview64iStopWithStalledClient: a client that sent its request and
// then stopped reading the answer (a large listing), or stalled in its
// request's body, keeps its connection active; serveHTTP's Shutdown then
// waits its whole 15 s for it, and, that wait run out, serveHTTP returned
// Shutdown's error without closing the connection: the shop logged
// "shop: context deadline exceeded" and exited 1, a stop turned into a
// failure by a client that does nothing (as a subscriptions/listen did
// before review 58). The refund and ticket servers and the gateway close
// such connections after their grace and stop cleanly.
func TestReview64iStopWithStalledClient(t *testing.T) {
	for _, tc := range []struct{ name, req string }{
		{"unread answer", "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:4107\r\nContent-Length: 2\r\n\r\n{}"},
		{"stalled body", "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:4107\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ln := &r64iPipes{conns: make(chan net.Conn), done: make(chan struct{})}
				answer := strings.Repeat(`{"sku":"RS-0001","name":"a product"},`, 1<<15)
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if _, err := io.ReadAll(r.Body); err != nil {
						return
					}
					io.WriteString(w, "["+answer+"]")
				})
				ctx, stop := context.WithCancel(context.Background())
				errc := make(chan error, 1)
				go func() { errc <- serveHTTP(ctx, ln, h) }()
				c := ln.dial()
				defer c.Close()
				if _, err := io.WriteString(c, tc.req); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Second) // the client reads nothing
				start := time.Now()
				stop()
				err := <-errc
				if err != nil {
					t.Errorf("the stop with a stalled client failed after %v: %v (the shop exits 1)", time.Since(start), err)
				}
				c.Close() // ends the handler still writing, if any
			})
		})
	}
}
