//go:build unix

package pgtest

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// gateProxy is a TCP proxy on a loopback port in front of the PostgreSQL
// server on port. While closed is set it closes every new connection at
// once; once hold is set, it drops the next COMMIT a client sends and ends
// that client's side (the server's side stays open: its backend waits, idle
// in transaction). It drops cancel requests. It stops with the test.
func gateProxy(t *testing.T, port int) (ln net.Listener, closed, hold *atomic.Bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	closed, hold = new(atomic.Bool), new(atomic.Bool)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if closed.Load() {
				c.Close()
				continue
			}
			s, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			open = append(open, c, s)
			mu.Unlock()
			wg.Go(func() { io.Copy(c, s); c.Close() })
			wg.Go(func() {
				defer c.Close()
				buf := make([]byte, 64<<10)
				for first := true; ; first = false {
					n, err := c.Read(buf)
					if first && bytes.HasPrefix(buf[:n], cancelRequest) {
						s.Close()
						return
					}
					if n > 0 {
						if bytes.Contains(bytes.ToLower(buf[:n]), []byte("commit\x00")) && hold.CompareAndSwap(true, false) {
							return
						}
						if _, werr := s.Write(buf[:n]); werr != nil {
							s.Close()
							return
						}
					}
					if err != nil {
						s.Close()
						return
					}
				}
			})
		}
	})
	return ln, closed, hold
}

// TestReview27bPostgresCommitCutThenCrash: the COMMIT of a batch never
// reaches the server, which then restarts after a crash (here an immediate
// shutdown; in production the OOM killer ending one backend restarts them
// all) before the sink can ask what became of the batch. The batch's
// transaction wrote nothing that reached the disk, so the server hands its
// id out again after the restart, to whatever transaction comes first: an
// id's status then tells nothing of the batch. Before the fix the sink took
// the batch for committed when another transaction that got its id had
// committed (the event lost, counted recorded), and ended the backend of
// another application whose transaction had it and was still in progress.
func TestReview27bPostgresCommitCutThenCrash(t *testing.T) {
	for _, other := range []string{"committed", "in progress"} {
		t.Run(other, func(t *testing.T) {
			p := startFailServer(t)
			// Writes of transactions that have not committed stay in
			// memory until the restart (the WAL writer writes only full
			// pages, or asynchronous commits).
			if _, err := p.admin.Exec(`ALTER SYSTEM SET wal_writer_delay = '10s'`); err != nil {
				t.Fatal(err)
			}
			if _, err := p.admin.Exec(`SELECT pg_reload_conf()`); err != nil {
				t.Fatal(err)
			}
			ln, closed, hold := gateProxy(t, p.pg.Port)
			db, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable&connect_timeout=2", ln.Addr(), p.name))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var lastErr atomic.Value
			s, err := audit.NewSQL(context.Background(), db, audit.Postgres, &audit.SQLOptions{OnError: func(err error) { lastErr.Store(err.Error()) }})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := s.Write(ctx, failEvent("warm", 0)); err != nil {
				t.Fatal(err)
			}
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			var before int64
			if err := p.admin.QueryRow(`SELECT txid_current()`).Scan(&before); err != nil {
				t.Fatal(err)
			}
			hold.Store(true)
			closed.Store(true) // the sink's checks do not get through until the other transactions ran
			if err := s.Write(ctx, failEvent("cut", 0)); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(2 * time.Second); hold.Load(); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the sink sent no COMMIT")
				}
			}
			p.restart(t, 0)
			direct, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.pg.Port, p.name))
			if err != nil {
				t.Fatal(err)
			}
			defer direct.Close()
			var otherTx *sql.Tx
			var after int64
			if other == "committed" {
				for range 20 {
					var x int64
					if err := direct.QueryRow(`SELECT txid_current()`).Scan(&x); err != nil {
						t.Fatal(err)
					}
					if after == 0 {
						after = x
					}
				}
			} else {
				// The batch's transaction took the id after before: the
				// other application's transaction that gets it stays open.
				for x := int64(0); x <= before; {
					if otherTx, err = direct.Begin(); err != nil {
						t.Fatal(err)
					}
					defer otherTx.Rollback()
					if err := otherTx.QueryRow(`SELECT txid_current()`).Scan(&x); err != nil {
						t.Fatal(err)
					}
					if after == 0 {
						after = x
					}
					if x <= before {
						otherTx.Commit()
					}
				}
			}
			t.Logf("last id before the cut %d, first after the restart %d", before, after)
			if after > before+1 {
				t.Skip("the server did not hand out the batch's transaction id again")
			}
			closed.Store(false)
			flushCtx, cancel := context.WithTimeout(ctx, 8*time.Second)
			defer cancel()
			flushErr := s.Flush(flushCtx)
			if otherTx != nil {
				var one int
				if err := otherTx.QueryRow(`SELECT 1`).Scan(&one); err != nil {
					t.Errorf("the other application's transaction, in progress with the batch's id: %v (last OnError: %v)", err, lastErr.Load())
				}
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			got := counts(t, direct)
			if got["cut-00000"] != 1 || got["warm-00000"] != 1 {
				t.Errorf("recorded %v, want cut-00000 and warm-00000 once (Flush: %v, Stats: %+v, last OnError: %v)", got, flushErr, s.Stats(), lastErr.Load())
			}
		})
	}
}

// TestReview27bPostgresCommitCutRoleNotSuperuser: the sink's role is an
// ordinary one (no superuser, no pg_signal_backend), owner of its
// database: it may still end the backend of its batch's transaction, held
// idle in transaction by a COMMIT that never reached the server, and the
// batch is recorded once, without waiting on that backend.
func TestReview27bPostgresCommitCutRoleNotSuperuser(t *testing.T) {
	p := startFailServer(t)
	for _, q := range []string{
		`CREATE ROLE sink LOGIN`,
		`CREATE DATABASE sinkdb OWNER sink`,
	} {
		if _, err := p.admin.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	ln, cut, cuts := commitCutter(t, p.pg.Port, holdCommit)
	db, err := sql.Open("pgx", fmt.Sprintf("postgres://sink@%s/sinkdb?sslmode=disable", ln.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var lastErr atomic.Value
	s, err := audit.NewSQL(context.Background(), db, audit.Postgres, &audit.SQLOptions{OnError: func(err error) { lastErr.Store(err.Error()) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cut.Store(1)
	if err := s.Write(ctx, failEvent("role", 0)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	flushErr := s.Flush(ctx)
	took := time.Since(start)
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if cuts.Load() != 1 {
		t.Fatalf("the proxy cut %d COMMITs, want 1", cuts.Load())
	}
	direct, err := sql.Open("pgx", fmt.Sprintf("postgres://sink@127.0.0.1:%d/sinkdb?sslmode=disable", p.pg.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	if got := counts(t, direct); got["role-00000"] != 1 || flushErr != nil || took > 3*time.Second {
		t.Errorf("recorded %v, Flush: %v after %v; want role-00000 once, nil within 3s (last OnError: %v)", got, flushErr, took, lastErr.Load())
	}
}
