package audit_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/audit/audittest"
)

// TestSQLiteNativePath: with the pinned modernc.org/sqlite, the batches go
// through the native writer (a driver upgrade that renames the connection's
// fields makes the sink fall back to database/sql, and this test fail).
func TestSQLiteNativePath(t *testing.T) {
	ctx := context.Background()
	s := newSQLiteSink(t, openSQLite(t), nil)
	if err := s.Write(ctx, event("n1", 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if audit.UsesDatabaseSQL(s) {
		t.Errorf("the sink fell back to database/sql on a modernc.org/sqlite database")
	}
	if st := s.Stats(); st.Rows != 1 || st.Batches != 1 {
		t.Errorf("Stats = %+v, want 1 row in 1 batch", st)
	}
}

// variedEvents returns n events whose every field differs from one event to
// the next (some strings empty, some long, Args absent or present).
func variedEvents(prefix string, n int) []audit.Event {
	base := time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC)
	out := make([]audit.Event, n)
	for i := range out {
		e := audit.Event{
			Time:          base.Add(time.Duration(i) * time.Millisecond),
			CorrelationID: fmt.Sprintf("%s-%04d", prefix, i),
			SessionID:     fmt.Sprintf("s%d", i%7), Subject: strings.Repeat("u", i%5),
			Tool: fmt.Sprintf("tool_%d", i%3), Class: []string{"read", "write", ""}[i%3],
			Phase: []audit.Phase{audit.PhaseOutcome, audit.PhaseIntent}[i%2], Allowed: i%2 == 0, DryRun: i%3 == 0,
			Code: []string{"", "FORBIDDEN"}[i%2], Detail: strings.Repeat("dé日", i%11),
			LatencyMS: float64(i) / 8, ArgsSHA256: strings.Repeat("a", i%65), Cost: float64(i%4) * 1.5,
			ProtocolVersion: "2026-07-28", ClientName: strings.Repeat("c", i%2),
		}
		if i%4 == 1 {
			e.Roles = []string{"r", fmt.Sprint(i)}
		}
		if i%5 == 2 {
			e.Args = map[string]any{"i": float64(i), "s": "v"}
		}
		if i%37 == 36 {
			e.Detail = strings.Repeat("z", 40<<10) // outgrows the bind buffer mid-batch
		}
		out[i] = e
	}
	return out
}

// TestSQLiteBatchShapes writes batches of 1 to 70 events (INSERTs of 32 rows
// and power-of-two remainders, a bind buffer that grows mid-batch) and reads
// every field back.
func TestSQLiteBatchShapes(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	s := newSQLiteSink(t, db, nil)
	// Hold the write lock so that each batch is queued whole before the
	// writer's transaction can start, then release it.
	var want []audit.Event
	for n := 1; n <= 70; n += 3 {
		evs := variedEvents(fmt.Sprintf("b%02d", n), n)
		writeUnderLock(t, db, s, evs)
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		want = append(want, variedEvents(fmt.Sprintf("b%02d", n), n)...)
	}
	got, err := s.Query(ctx, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	byID := func(a, b audit.Event) int { return strings.Compare(a.CorrelationID, b.CorrelationID) }
	slices.SortFunc(got, byID)
	slices.SortFunc(want, byID)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events read back (-want +got):\n%s", diff)
	}
	if audit.UsesDatabaseSQL(s) {
		t.Errorf("the sink fell back to database/sql")
	}
}

// TestSQLiteRefusedRowRollsBack: a batch holding a row the database refuses
// (a trigger raises an error for it) is rolled back whole, retried, then
// written row by row: the refused row is reported lost, every other row is
// recorded exactly once.
func TestSQLiteRefusedRowRollsBack(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	var mu sync.Mutex
	var errs []error
	s, err := audit.NewSQL(ctx, db, audit.SQLite, &audit.SQLOptions{
		OnError: func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	refuseBad(t, db)
	evs := variedEvents("ok", 40)
	evs[33].CorrelationID = "bad"
	writeUnderLock(t, db, s, evs)
	if err := s.Flush(ctx); err == nil || !strings.Contains(err.Error(), "refused by trigger") {
		t.Errorf("Flush = %v, want the trigger's error", err)
	}
	if err := s.Close(); err == nil {
		t.Errorf("Close = nil, want an error counting the lost event")
	}
	var n, distinct, bad int
	if err := db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT correlation_id), COUNT(*) FILTER (WHERE correlation_id = 'bad') FROM audit_log`).Scan(&n, &distinct, &bad); err != nil {
		t.Fatal(err)
	}
	if n != 39 || distinct != 39 || bad != 0 {
		t.Errorf("audit_log has %d rows (%d distinct, %d refused), want 39 distinct and none refused", n, distinct, bad)
	}
	if st := s.Stats(); st.Rows != 39 || st.Lost != 1 {
		t.Errorf("Stats = %+v, want 39 rows and 1 lost", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) == 0 {
		t.Errorf("OnError never called")
	}
}

// wrapConnector opens modernc.org/sqlite connections wrapped in a type of
// its own, as another SQLite driver would be: the sink cannot reach their
// handle and must write through database/sql.
type wrapConnector struct {
	d   driver.Driver
	dsn string
}

type wrappedConn struct{ driver.Conn }

func (c wrapConnector) Connect(context.Context) (driver.Conn, error) {
	dc, err := c.d.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return wrappedConn{dc}, nil
}

func (c wrapConnector) Driver() driver.Driver { return c.d }

func openWrappedSQLite(t *testing.T) *sql.DB {
	t.Helper()
	plain := openSQLite(t) // for its driver
	dsn := "file:" + filepath.Join(t.TempDir(), "wrapped.db") + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_txlock=immediate"
	db := sql.OpenDB(wrapConnector{d: plain.Driver(), dsn: dsn})
	t.Cleanup(func() { db.Close() })
	return db
}

// TestSQLiteOtherDriverConformance: on connections the native writer cannot
// use, the sink passes the conformance kit through database/sql.
func TestSQLiteOtherDriverConformance(t *testing.T) {
	var sinks []*audit.SQLSink
	audittest.Run(t, func(t *testing.T) audittest.Harness {
		h := sqlHarness(func(t *testing.T) *sql.DB { return openWrappedSQLite(t) }, audit.SQLite)(t)
		sinks = append(sinks, h.Sink.(*audit.SQLSink))
		return h
	})
	for _, s := range sinks {
		if st := s.Stats(); st.Batches > 0 && !audit.UsesDatabaseSQL(s) {
			t.Errorf("a sink on wrapped connections did not fall back to database/sql")
		}
	}
	if len(sinks) == 0 {
		t.Fatal("no sink")
	}
}

// writeUnderLock queues evs on s while another connection holds the
// database's write lock, then releases it: the events are queued whole
// before the writer's transaction can start.
func writeUnderLock(t *testing.T, db *sql.DB, s *audit.SQLSink, evs []audit.Event) {
	t.Helper()
	release := holdWriteLock(t, db)
	for i := range evs {
		if err := s.Write(context.Background(), &evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	release()
}

// holdWriteLock takes db's write lock on a connection of its own and
// returns the function that releases it.
func holdWriteLock(t *testing.T, db *sql.DB) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		conn.Close()
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
	}
}
