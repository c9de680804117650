package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// pgFailServer is a PostgreSQL server of its own (the test stops it), with
// one database and an admin connection to the database "postgres".
type pgFailServer struct {
	pg    *testsvc.Postgres
	admin *sql.DB
	db    *sql.DB
	name  string
}

func startFailServer(t *testing.T) *pgFailServer {
	t.Helper()
	pg := testsvc.StartPostgres(t)
	admin, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	name := "failing"
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", pg.Port, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &pgFailServer{pg: pg, admin: admin, db: db, name: name}
}

// failEvent is event i of a stream.
func failEvent(prefix string, i int) *audit.Event {
	return &audit.Event{
		Time:          time.Unix(1_800_000_000, int64(i)*1000).UTC(),
		CorrelationID: fmt.Sprintf("%s-%05d", prefix, i),
		SessionID:     "sess",
		Subject:       "alice",
		Tool:          "refund",
		Class:         "write",
		Phase:         audit.PhaseOutcome,
		Allowed:       true,
	}
}

// counts returns how many times each correlation id is in audit_log.
func counts(t *testing.T, db *sql.DB) map[string]int {
	t.Helper()
	rs, err := db.Query(`SELECT correlation_id, COUNT(*) FROM audit_log GROUP BY correlation_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	m := map[string]int{}
	for rs.Next() {
		var id string
		var n int
		if err := rs.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		m[id] = n
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// streamThrough writes n events (every 25th through WriteDurable) while
// disrupt runs, started in a goroutine after n/4 events; it waits for
// disrupt and returns which WriteDurable calls succeeded and which failed.
func streamThrough(t *testing.T, s *audit.SQLSink, prefix string, n int, disrupt func()) (durOK, durFailed []string) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range n {
		if i == n/4 {
			wg.Go(disrupt)
		}
		e := failEvent(prefix, i)
		if i%25 == 0 {
			if err := s.WriteDurable(ctx, e); err != nil {
				durFailed = append(durFailed, e.CorrelationID)
			} else {
				durOK = append(durOK, e.CorrelationID)
			}
			continue
		}
		if err := s.Write(ctx, e); err != nil {
			t.Fatalf("Write %s: %v", e.CorrelationID, err)
		}
		if i%10 == 0 {
			time.Sleep(time.Millisecond) // a stream, not one burst
		}
	}
	return durOK, durFailed
}

// checkStream checks that every event Write accepted is recorded exactly
// once and that every WriteDurable that returned nil is recorded.
func checkStream(t *testing.T, db *sql.DB, prefix string, n int, durOK, durFailed []string, st audit.SQLStats) {
	t.Helper()
	got := counts(t, db)
	failed := map[string]bool{}
	for _, id := range durFailed {
		failed[id] = true
	}
	var missing, dup []string
	for i := range n {
		id := fmt.Sprintf("%s-%05d", prefix, i)
		switch c := got[id]; {
		case c == 0 && !failed[id]:
			missing = append(missing, id)
		case c > 1:
			dup = append(dup, fmt.Sprintf("%s×%d", id, c))
		}
	}
	if len(missing) > 0 || st.Lost != 0 {
		t.Errorf("%d acknowledged events missing (first: %v), Stats.Lost = %d; want every event recorded",
			len(missing), missing[:min(len(missing), 5)], st.Lost)
	}
	if len(dup) > 0 {
		t.Errorf("events recorded more than once: %v", dup[:min(len(dup), 10)])
	}
	var failedRecorded []string
	for _, id := range durFailed {
		if got[id] > 0 {
			failedRecorded = append(failedRecorded, id)
		}
	}
	t.Logf("%d WriteDurable ok, %d failed (%v), of which recorded all the same: %v", len(durOK), len(durFailed), durFailed, failedRecorded)
}

// TestPostgresImmediateStopAndRestart: the server is stopped as by
// "pg_ctl stop -m immediate" in the middle of a stream of writes and
// started again a second later. The queued events wait for it (none lost,
// none twice) and a WriteDurable returns nil only for a committed event.
func TestPostgresImmediateStopAndRestart(t *testing.T) {
	p := startFailServer(t)
	var mu sync.Mutex
	var errs []string
	s, err := audit.NewSQL(context.Background(), p.db, audit.Postgres, &audit.SQLOptions{
		OnError: func(err error) { mu.Lock(); errs = append(errs, err.Error()); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	durOK, durFailed := streamThrough(t, s, "restart", n, func() { p.restart(t, time.Second) })
	if err := s.Flush(context.Background()); err != nil {
		t.Errorf("Flush after the restart: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close after the restart: %v", err)
	}
	checkStream(t, p.db, "restart", n, durOK, durFailed, s.Stats())
	mu.Lock()
	t.Logf("%d OnError calls; first: %v", len(errs), errs[:min(len(errs), 3)])
	mu.Unlock()
}

// TestPostgresTerminatedBackends: pg_terminate_backend kills the sink's
// connections several times during a stream (an operator, a pooler, a
// failover). No event is lost or recorded twice.
func TestPostgresTerminatedBackends(t *testing.T) {
	p := startFailServer(t)
	var mu sync.Mutex
	var errs []string
	s, err := audit.NewSQL(context.Background(), p.db, audit.Postgres, &audit.SQLOptions{
		BatchSize: 64,
		OnError:   func(err error) { mu.Lock(); errs = append(errs, err.Error()); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	kill := func() {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				p.admin.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, p.name)
			}
		})
	}
	const n = 3000
	durOK, durFailed := streamThrough(t, s, "term", n, kill)
	close(stop)
	wg.Wait()
	if err := s.Flush(context.Background()); err != nil {
		t.Errorf("Flush: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	checkStream(t, p.db, "term", n, durOK, durFailed, s.Stats())
	mu.Lock()
	t.Logf("%d OnError calls; first: %v", len(errs), errs[:min(len(errs), 3)])
	mu.Unlock()
}

// TestPostgresRefusedRowInBatch: the database refuses one row of a batch
// (here a CHECK constraint an operator added; the sink itself makes NUL
// bytes and invalid UTF-8 storable). The other rows of the batch are
// recorded, the refused one is counted lost and reported by Flush and
// Close, the queue is not blocked, and a WriteDurable of a refused row
// returns an error.
func TestPostgresRefusedRowInBatch(t *testing.T) {
	p := startFailServer(t)
	s, err := audit.NewSQL(context.Background(), p.db, audit.Postgres, &audit.SQLOptions{OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.db.Exec(`ALTER TABLE audit_log ADD CONSTRAINT no_poison CHECK (detail <> 'poison')`); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n = 40
	for i := range n {
		e := failEvent("batch", i)
		switch i {
		case 17:
			e.Detail = "poison"
		case 18:
			e.Detail = "nul\x00and\xffinvalid"
			e.Subject = "\x00"
			e.Roles = []string{"a\x00", "\xfe"}
			e.Args = map[string]any{"k\x00": "v\x00\xff"}
		}
		if err := s.Write(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err == nil {
		t.Errorf("Flush after a refused row = nil, want the row's error")
	}
	e := failEvent("durable", 0)
	e.Detail = "poison"
	if err := s.WriteDurable(ctx, e); err == nil {
		t.Errorf("WriteDurable of a refused row = nil")
	}
	if err := s.WriteDurable(ctx, failEvent("durable", 1)); err != nil {
		t.Errorf("WriteDurable after a refused row: %v", err)
	}
	got := counts(t, p.db)
	var missing []string
	for i := range n {
		id := fmt.Sprintf("batch-%05d", i)
		if i != 17 && got[id] != 1 {
			missing = append(missing, fmt.Sprintf("%s×%d", id, got[id]))
		}
	}
	if len(missing) > 0 || got["batch-00017"] != 0 {
		t.Errorf("rows of a batch with one refused row: wrong counts %v, refused row ×%d; want the %d others once each", missing, got["batch-00017"], n-1)
	}
	if st := s.Stats(); st.Lost != 1 {
		t.Errorf("Stats.Lost = %d, want 1", st.Lost)
	}
	if err := s.Close(); err == nil || !strings.Contains(err.Error(), "1 events not recorded") {
		t.Errorf("Close = %v, want an error counting 1 event not recorded", err)
	}
}

// TestPostgresWriteDurableOnTerminatedConnection: the server ended the
// pool's idle connections (pg_terminate_backend, idle_session_timeout, a
// restart): the next WriteDurable on such a connection gets the server's
// FATAL 57P01 in answer to its INSERT, which therefore never ran. The
// database is up: the intent must be recorded on another connection,
// not refused (the guard would refuse the write tool's call with
// AUDIT_UNAVAILABLE).
func TestPostgresWriteDurableOnTerminatedConnection(t *testing.T) {
	p := startFailServer(t)
	p.db.SetMaxIdleConns(4)
	s, err := audit.NewSQL(context.Background(), p.db, audit.Postgres, &audit.SQLOptions{OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for round := range 5 {
		if err := s.WriteDurable(ctx, failEvent("warm", round)); err != nil {
			t.Fatal(err)
		}
		if _, err := p.admin.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, p.name); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // the backends are gone; the pool does not know yet
		if err := s.WriteDurable(ctx, failEvent("after-terminate", round)); err != nil {
			t.Errorf("round %d: WriteDurable on a connection the server ended, database up: %v", round, err)
		}
	}
	got := counts(t, p.db)
	for round := range 5 {
		if id := failEvent("after-terminate", round).CorrelationID; got[id] > 1 {
			t.Errorf("%s recorded %d times", id, got[id])
		}
	}
}
