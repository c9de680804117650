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
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// How commitCutter treats the COMMIT it cuts.
const (
	// passCommit passes the COMMIT on to the server, then ends the sink's
	// side: the server commits, the sink reads end of file.
	passCommit = iota
	// holdCommit drops the COMMIT and ends only the sink's side: the
	// server's side stays open and its backend waits, idle in transaction,
	// for a COMMIT that never comes (a NAT that forgot the flow).
	holdCommit
	// lateCommit ends the sink's side at once and passes the COMMIT on to
	// the server 500ms later (a message delayed on its way).
	//
	// In each mode the server's side stays open until the test ends.
	lateCommit
)

// cancelRequest starts PostgreSQL's CancelRequest message.
var cancelRequest = []byte{0, 0, 0, 16, 0x04, 0xd2, 0x16, 0x2e}

// commitCutter is a TCP proxy on a loopback port in front of the
// PostgreSQL server on port: while cut is positive, it treats the next
// COMMIT a client sends as modes says (the k-th cut as modes[k-1], or the
// last of modes), and counts it in cuts. It drops every cancel request;
// everything else passes. It stops with the test.
func commitCutter(t *testing.T, port int, modes ...int) (ln net.Listener, cut, cuts *atomic.Int32) {
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
	cut, cuts = new(atomic.Int32), new(atomic.Int32)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
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
						// pgx sends one when a connection breaks, which may
						// end the COMMIT under way, or not: here it never does.
						s.Close()
						return
					}
					if n > 0 {
						if bytes.Contains(bytes.ToLower(buf[:n]), []byte("commit\x00")) && cut.Add(-1) >= 0 {
							k := int(cuts.Add(1))
							// The server's side stays open until the test ends:
							// its backend does not notice the cut.
							switch modes[min(k, len(modes))-1] {
							case passCommit:
								s.Write(buf[:n])
							case lateCommit:
								c.Close()
								time.Sleep(500 * time.Millisecond)
								s.Write(buf[:n])
							}
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
	return ln, cut, cuts
}

// TestReview27PostgresCommitAnswerCutWhileCommitting: the connection of a
// batch breaks while the server is still committing it (here a deferred
// trigger that takes a second; in production a slow WAL flush, a
// synchronous standby). The sink cannot know whether the batch is in, and
// looks for it; it must not take "not there yet" for "not there": before
// the fix it inserted the batch again, and the server then committed both.
// The same when the COMMIT reaches the server late (lateCommit), and when
// it never does while the server's backend waits for it (holdCommit: the
// sink must not wait for that backend for good either).
func TestReview27PostgresCommitAnswerCutWhileCommitting(t *testing.T) {
	pg := testsvc.StartPostgres(t)
	admin, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, tc := range []struct {
		name string
		mode int
	}{{"pass", passCommit}, {"late", lateCommit}, {"hold", holdCommit}} {
		t.Run(tc.name, func(t *testing.T) {
			name := "cut_" + tc.name
			if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
				t.Fatal(err)
			}
			direct, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", pg.Port, name))
			if err != nil {
				t.Fatal(err)
			}
			defer direct.Close()
			ln, cut, cuts := commitCutter(t, pg.Port, tc.mode)
			db, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", ln.Addr(), name))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var lastErr atomic.Value
			s, err := audit.NewSQL(context.Background(), db, audit.Postgres, &audit.SQLOptions{OnError: func(err error) { lastErr.Store(err.Error()) }})
			if err != nil {
				t.Fatal(err)
			}
			slowCommits(t, direct, "1")
			ctx := context.Background()
			at := time.Unix(1_800_000_000, 0).UTC()
			cut.Store(1)
			const n = 5
			for i := range n {
				e := &audit.Event{Time: at, CorrelationID: "slow-" + strconv.Itoa(i), Tool: "fast", Phase: audit.PhaseOutcome}
				if i == 0 {
					e.Tool = "slow" // one second more for the commit of its transaction
				}
				if err := s.Write(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			flushErr := s.Flush(ctx)
			took := time.Since(start)
			if cuts.Load() != 1 {
				t.Fatalf("the proxy cut %d COMMITs, want 1", cuts.Load())
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			// Wait for the server to settle the transaction cut off, if it
			// has not (holdCommit, before the fix: its backend waits for
			// good, and does not commit).
			for deadline := time.Now().Add(1500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				var open int
				if err := admin.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND backend_xid IS NOT NULL`, name).Scan(&open); err != nil {
					t.Fatal(err)
				}
				if open == 0 {
					break
				}
			}
			got := counts(t, direct)
			for i := range n {
				if id := "slow-" + strconv.Itoa(i); got[id] != 1 {
					t.Errorf("%s recorded %d times, want once (Flush: %v after %v, Stats: %+v, last OnError: %v)",
						id, got[id], flushErr, took, s.Stats(), lastErr.Load())
				}
			}
			if flushErr != nil || took > 3*time.Second {
				t.Errorf("Flush: %v after %v; want nil within 3s", flushErr, took)
			}
		})
	}
}

// TestReview27PostgresRowCommitCutAfterBatchFailed: a batch's COMMIT is
// cut off three times (the server never gets it), so that the writer
// inserts its rows one by one; the COMMIT of the first row is cut off too,
// after the server got it. That row is found committed; the next rows
// must still be inserted, not taken for committed with it.
func TestReview27PostgresRowCommitCutAfterBatchFailed(t *testing.T) {
	p := startFailServer(t)
	ln, cut, cuts := commitCutter(t, p.pg.Port, holdCommit, holdCommit, holdCommit, passCommit)
	db, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", ln.Addr(), p.name))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var lastErr atomic.Value
	s, err := audit.NewSQL(context.Background(), db, audit.Postgres, &audit.SQLOptions{OnError: func(err error) { lastErr.Store(err.Error()) }})
	if err != nil {
		t.Fatal(err)
	}
	slowCommits(t, p.db, "0.5")
	ctx := context.Background()
	at := time.Unix(1_800_000_000, 0).UTC()
	ev := func(id, tool string) *audit.Event {
		return &audit.Event{Time: at, CorrelationID: id, Tool: tool, Phase: audit.PhaseOutcome}
	}
	// The writer commits this one for half a second, while the next ones
	// queue: they make one batch.
	if err := s.Write(ctx, ev("first", "slow")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	cut.Store(4)
	const n = 3
	for i := range n {
		if err := s.Write(ctx, ev("row-"+strconv.Itoa(i), "fast")); err != nil {
			t.Fatal(err)
		}
	}
	flushErr := s.Flush(ctx)
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if cuts.Load() != 4 {
		t.Fatalf("the proxy cut %d COMMITs, want 4 (last OnError: %v)", cuts.Load(), lastErr.Load())
	}
	got := counts(t, p.db)
	for _, id := range []string{"first", "row-0", "row-1", "row-2"} {
		if got[id] != 1 {
			t.Errorf("%s recorded %d times, want once (Flush: %v, Stats: %+v, last OnError: %v)", id, got[id], flushErr, s.Stats(), lastErr.Load())
		}
	}
}
