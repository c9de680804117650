package testsvc

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// CutProxy is a TCP proxy on a loopback port in front of the server on
// 127.0.0.1:port, for tests of a connection lost at a chosen moment. Each
// piece read from the server (when fromServer is set) or from the client
// is passed on unless cut reports true for it: then the proxy ends that
// connection instead, so that the other side never gets the piece (a
// commit lost on its way to the server, or its answer on its way back).
// Everything else passes as it is. The proxy stops when t ends, closing
// the connections still open through it and waiting for its goroutines;
// it returns the listener, whose Addr the client dials.
func CutProxy(t testing.TB, port int, fromServer bool, cut func(piece []byte) bool) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		open   = map[net.Conn]bool{}
		closed bool
		wg     sync.WaitGroup
	)
	// track adds c to the connections closed at the end, or closes it
	// when the end has come; untrack closes it and forgets it.
	track := func(c net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			c.Close()
			return false
		}
		open[c] = true
		return true
	}
	untrack := func(c net.Conn) {
		c.Close()
		mu.Lock()
		delete(open, c)
		mu.Unlock()
	}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		closed = true
		for c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !track(c) {
				continue
			}
			s, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
			if err != nil {
				untrack(c)
				continue
			}
			if !track(s) {
				untrack(c)
				continue
			}
			// from is the side watched, to the side it is passed to.
			from, to := c, s
			if fromServer {
				from, to = s, c
			}
			wg.Go(func() { io.Copy(from, to); from.Close() })
			wg.Go(func() {
				defer untrack(c)
				defer untrack(s)
				buf := make([]byte, 64<<10)
				for {
					n, err := from.Read(buf)
					if n > 0 {
						if cut(buf[:n]) {
							return
						}
						if _, werr := to.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			})
		}
	})
	return ln
}

// commitComplete is PostgreSQL's CommandComplete message for a COMMIT: the
// server's answer once the transaction is committed.
var commitComplete = []byte("C\x00\x00\x00\x0bCOMMIT\x00")

// CommitAnswerDropper is a [CutProxy] in front of the PostgreSQL server on
// 127.0.0.1:port that, once drop is set, ends the connection carrying the
// server's next answer to a COMMIT instead of passing it on (the commit
// done, its answer lost), clears drop and counts it in dropped.
func CommitAnswerDropper(t testing.TB, port int) (ln net.Listener, drop *atomic.Bool, dropped *atomic.Int32) {
	t.Helper()
	drop, dropped = new(atomic.Bool), new(atomic.Int32)
	ln = CutProxy(t, port, true, func(piece []byte) bool {
		if bytes.Contains(piece, commitComplete) && drop.CompareAndSwap(true, false) {
			dropped.Add(1)
			return true
		}
		return false
	})
	return ln, drop, dropped
}
