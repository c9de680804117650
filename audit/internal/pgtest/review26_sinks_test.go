package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// freezeProxy is a TCP proxy in front of a PostgreSQL server that can stop
// passing bytes, either way, while keeping every connection open: a server
// stopped (SIGSTOP, a VM paused) or a network that drops packets without a
// reset. The client waits for an answer that does not come.
type freezeProxy struct {
	ln     net.Listener
	frozen atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func startFreezeProxy(t *testing.T, port int) *freezeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezeProxy{ln: ln}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			wg.Go(func() { p.pass(s, c) })
			wg.Go(func() { p.pass(c, s) })
		}
	})
	t.Cleanup(func() {
		p.frozen.Store(false)
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		wg.Wait()
	})
	return p
}

// pass copies src to dst, holding what it read while the proxy is frozen.
func (p *freezeProxy) pass(dst io.WriteCloser, src io.ReadCloser) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for p.frozen.Load() {
			time.Sleep(5 * time.Millisecond)
		}
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestReview26PostgresCloseWhileServerSilent: Close while the server stops
// answering without closing its connections. The writer's insert waited
// for an answer for good (its context was never done, and pgx sets no
// timeout of its own), as did a WriteDurable with no deadline, which held
// the lock Close takes: Close never returned, where its doc says it gives
// up on a database that keeps failing.
func TestReview26PostgresCloseWhileServerSilent(t *testing.T) {
	p := startFailServer(t)
	fp := startFreezeProxy(t, p.pg.Port)
	db, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", fp.ln.Addr(), p.name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	s, err := audit.NewSQL(ctx, db, audit.Postgres, &audit.SQLOptions{OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, failEvent("silent", 0)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	fp.frozen.Store(true)
	if err := s.Write(ctx, failEvent("silent", 1)); err != nil {
		t.Fatal(err)
	}
	durable := make(chan error, 1)
	go func() { durable <- s.WriteDurable(ctx, failEvent("silent", 2)) }()
	time.Sleep(200 * time.Millisecond) // the insert and the WriteDurable wait for the server
	closed := make(chan error, 1)
	start := time.Now()
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		t.Logf("Close after %v: %v", time.Since(start).Round(time.Millisecond), err)
		if err == nil {
			t.Errorf("Close = nil, want an error counting the event the silent server did not take")
		}
	case <-time.After(8 * time.Second):
		t.Errorf("Close did not return within 8s of a server that stopped answering")
		fp.frozen.Store(false)
		<-closed
	}
	select {
	case err := <-durable:
		if err == nil {
			t.Errorf("WriteDurable = nil while the server did not answer")
		}
	case <-time.After(time.Second):
		t.Errorf("WriteDurable still waiting after Close returned")
		fp.frozen.Store(false)
		<-durable
	}
	fp.frozen.Store(false)
	got := counts(t, p.db)
	st := s.Stats()
	if got["silent-00000"] != 1 || got["silent-00001"] > 1 || st.Rows+st.Lost != 2 {
		t.Errorf("rows %v, Stats %+v: want silent-00000 once, silent-00001 at most once, each queued event committed or lost", got, st)
	}
}
