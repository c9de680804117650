package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// cutProxy is a TCP proxy in front of a PostgreSQL server that can cut
// every connection through it at once, as a NAT or a firewall that forgets
// its flows, a pooler or a load balancer that restarts, or a failover
// would: the client reads end of file (or a reset) with no answer from the
// server, whose backend goes on until it notices.
type cutProxy struct {
	ln    net.Listener
	to    string
	mu    sync.Mutex
	conns map[net.Conn]bool
	cuts  int
}

func startCutProxy(t *testing.T, to string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, to: to, conns: map[net.Conn]bool{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		p.cut()
	})
	return p
}

func (p *cutProxy) serve(c net.Conn) {
	s, err := net.Dial("tcp", p.to)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[s] = true, true
	p.mu.Unlock()
	go func() { io.Copy(s, c); s.Close(); c.Close() }()
	io.Copy(c, s)
	c.Close()
	s.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}

// cut closes every connection through the proxy, both ways.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
	p.cuts++
}

// TestReview16PostgresConnectionsCut: the network between the sink and a
// running PostgreSQL server cuts every connection every 20ms during a
// stream of writes. The server never refuses a row, so none may be
// counted lost: every event Write accepted is recorded once, and every
// WriteDurable that returned nil is recorded. (The server answers pings
// between two cuts: an INSERT cut off without an answer is not a refusal.)
// A WriteDurable cut off may fail, and its event may then be recorded all
// the same: the cut may have come after the commit.
func TestReview16PostgresConnectionsCut(t *testing.T) {
	p := startFailServer(t)
	proxy := startCutProxy(t, fmt.Sprintf("127.0.0.1:%d", p.pg.Port))
	db, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable&connect_timeout=5", proxy.ln.Addr(), p.name))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxIdleConns(8)
	var mu sync.Mutex
	var errs []string
	s, err := audit.NewSQL(context.Background(), db, audit.Postgres, &audit.SQLOptions{
		BatchSize: 64,
		OnError:   func(err error) { mu.Lock(); errs = append(errs, err.Error()); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	cut := func() {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				proxy.cut()
			}
		})
	}
	const n = 3000
	durOK, durFailed := streamThrough(t, s, "cut", n, cut)
	close(stop)
	wg.Wait()
	if err := s.Flush(context.Background()); err != nil {
		t.Errorf("Flush: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	checkStream(t, p.db, "cut", n, durOK, durFailed, s.Stats())
	mu.Lock()
	t.Logf("%d cuts, %d OnError calls; first: %v", proxy.cuts, len(errs), errs[:min(len(errs), 3)])
	mu.Unlock()
}
