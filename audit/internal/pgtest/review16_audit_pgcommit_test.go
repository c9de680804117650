package pgtest

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestReview16CommitLostBeforeServer: the connection breaks as the sink
// sends a batch's COMMIT, before the server gets it (a proxy drops it, with
// the connection): the batch is not in, and the sink, which cannot tell,
// looks for it before it inserts it again. The batch's rows share their
// correlation id, time and phase with a row committed earlier (the records
// of one gateway request: one correlation id, and the same time from a
// clock that did not move between them, a coarse one or the gateway's
// Options.Now), so finding that row must not pass for finding the batch.
// Before the fix the batch was taken as committed: its 20 rows lost, with
// no error from Flush or Close and Stats.Lost 0.
func TestReview16CommitLostBeforeServer(t *testing.T) {
	p := startFailServer(t)
	s, drop, dropped, lastErr := sinkBehindDropper(t, p)
	ctx := context.Background()
	at := time.Unix(1_800_000_000, 0).UTC()
	ev := func(tool string) *audit.Event {
		return &audit.Event{Time: at, CorrelationID: "gw-request-1", Tool: tool, Phase: audit.PhaseOutcome, Code: "FORBIDDEN", Detail: "refused " + tool}
	}
	if err := s.Write(ctx, ev("first")); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	drop.Store(1)
	const n = 20
	for i := range n {
		if err := s.Write(ctx, ev("tool_"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	flushErr := s.Flush(ctx)
	closeErr := s.Close()
	if dropped.Load() != 1 {
		t.Fatalf("the proxy dropped %d COMMITs, want 1: the test did not break a commit", dropped.Load())
	}
	rs, err := p.db.Query(`SELECT tool, COUNT(*) FROM audit_log GROUP BY tool`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	got := map[string]int{}
	for rs.Next() {
		var tool string
		var c int
		if err := rs.Scan(&tool, &c); err != nil {
			t.Fatal(err)
		}
		got[tool] = c
	}
	var wrong []string
	for i := range n {
		if tool := "tool_" + strconv.Itoa(i); got[tool] != 1 {
			wrong = append(wrong, fmt.Sprintf("%s×%d", tool, got[tool]))
		}
	}
	if len(wrong) > 0 || got["first"] != 1 {
		t.Errorf("after a COMMIT lost on its way: %v (first×%d); want every row once. Flush: %v, Close: %v, Stats: %+v, last OnError: %v",
			wrong, got["first"], flushErr, closeErr, s.Stats(), lastErr.Load())
	}
}

// commitDropper is a TCP proxy on a loopback port in front of the
// PostgreSQL server on port: while drop is positive, it drops each COMMIT
// a client sends, with that client's connection (the commit lost on its
// way to the server), and counts it in dropped. It stops with the test.
func commitDropper(t *testing.T, port int) (ln net.Listener, drop, dropped *atomic.Int32) {
	return cuttingProxy(t, port, "commit\x00")
}

// cuttingProxy is a TCP proxy on a loopback port in front of the
// PostgreSQL server on port: while cut is positive, it ends the connection
// of each client that sends a piece holding needle (matched in lower
// case), without passing that piece on (the server never sees it and
// never answers), and counts it in cuts. Everything else passes. It stops
// with the test.
func cuttingProxy(t *testing.T, port int, needle string) (ln net.Listener, cut, cuts *atomic.Int32) {
	t.Helper()
	cut, cuts = new(atomic.Int32), new(atomic.Int32)
	ln = testsvc.CutProxy(t, port, false, func(piece []byte) bool {
		if bytes.Contains(bytes.ToLower(piece), []byte(needle)) && cut.Add(-1) >= 0 {
			cuts.Add(1)
			return true
		}
		return false
	})
	return ln, cut, cuts
}

// sinkBehindDropper returns a PostgreSQL sink on p's database reached
// through a commitDropper, with the dropper's counters and the last error
// the sink reported (OnError). The database handle closes with the test.
func sinkBehindDropper(t *testing.T, p *pgFailServer) (s *audit.SQLSink, drop, dropped *atomic.Int32, lastErr *atomic.Value) {
	t.Helper()
	ln, drop, dropped := commitDropper(t, p.pg.Port)
	db, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", ln.Addr(), p.name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	lastErr = new(atomic.Value)
	s, err = audit.NewSQL(context.Background(), db, audit.Postgres, &audit.SQLOptions{OnError: func(err error) { lastErr.Store(err.Error()) }})
	if err != nil {
		t.Fatal(err)
	}
	return s, drop, dropped, lastErr
}
