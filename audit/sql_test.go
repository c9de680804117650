package audit_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/audit/audittest"
)

var t0 = audittest.SessionStart

func sessionEvents() []audit.Event { return audittest.SessionEvents() }

func testQueries(t *testing.T, query func(audit.Filter) ([]audit.Event, error)) {
	t.Helper()
	audittest.RunQuery(t, func(ctx context.Context, f audit.Filter) ([]audit.Event, error) { return query(f) })
}

func openSQLite(t testing.TB) *sql.DB {
	t.Helper()
	db, err := audit.OpenSQLite(filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openSQLitePragmas opens a new SQLite file as OpenSQLite does, with the
// pragmas extra (such as "&_pragma=cache_size(-4096)") added to its DSN, and
// returns it and its path.
func openSQLitePragmas(t testing.TB, extra string) (*sql.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)&_txlock=immediate"+extra)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

// newSQLiteSink returns a sink on the SQLite database db, closed at the
// end of the test.
func newSQLiteSink(t testing.TB, db *sql.DB, opts *audit.SQLOptions) *audit.SQLSink {
	t.Helper()
	s, err := audit.NewSQL(context.Background(), db, audit.SQLite, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// refuseBad makes the audit_log of db refuse, with the error "refused by
// trigger", every row whose correlation id is "bad".
func refuseBad(t testing.TB, db *sql.DB) {
	t.Helper()
	if _, err := db.Exec(`CREATE TRIGGER refuse BEFORE INSERT ON audit_log WHEN NEW.correlation_id = 'bad'
BEGIN SELECT RAISE(ABORT, 'refused by trigger'); END`); err != nil {
		t.Fatal(err)
	}
}

func sqlHarness(db func(t *testing.T) *sql.DB, d audit.Dialect) func(t *testing.T) audittest.Harness {
	return func(t *testing.T) audittest.Harness {
		s, err := audit.NewSQL(context.Background(), db(t), d, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return audittest.Harness{Sink: s, Read: func(ctx context.Context) ([]audit.Event, error) {
			if err := s.Flush(ctx); err != nil {
				return nil, err
			}
			return s.Query(ctx, audit.Filter{})
		}}
	}
}

func TestSQLiteConformance(t *testing.T) {
	audittest.Run(t, sqlHarness(func(t *testing.T) *sql.DB { return openSQLite(t) }, audit.SQLite))
}

func TestSQLiteQuery(t *testing.T) {
	db := openSQLite(t)
	s, err := audit.NewSQL(context.Background(), db, audit.SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for i, e := range sessionEvents() {
		write := s.Write
		if i%2 == 0 {
			write = s.WriteDurable
		}
		if err := write(ctx, &e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	testQueries(t, func(f audit.Filter) ([]audit.Event, error) { return s.Query(ctx, f) })
	var human string
	if err := db.QueryRow(`SELECT time FROM audit_log WHERE correlation_id = 'c1'`).Scan(&human); err != nil {
		t.Fatal(err)
	}
	if want := "2026-07-28T09:00:01.000Z"; human != want {
		t.Errorf("column time = %q, want %q", human, want)
	}
}

func TestSQLiteSchema(t *testing.T) {
	db := openSQLite(t)
	ctx := context.Background()
	for range 2 { // the second open finds version 1 and changes nothing
		s, err := audit.NewSQL(ctx, db, audit.SQLite, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	var n, v int
	if err := db.QueryRow(`SELECT COUNT(*), MAX(version) FROM audit_schema_version`).Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	if n != 1 || v != audit.SchemaVersion {
		t.Errorf("audit_schema_version has %d rows, max %d; want 1 row, %d", n, v, audit.SchemaVersion)
	}
	if _, err := db.Exec(`INSERT INTO audit_schema_version (version) VALUES (99)`); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.NewSQL(ctx, db, audit.SQLite, nil); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("NewSQL on a newer schema = %v, want an error", err)
	}
	if _, err := audit.NewSQL(ctx, db, "oracle", nil); err == nil {
		t.Errorf("NewSQL with an unknown dialect succeeded")
	}
}

func TestSQLiteStoresUnstorableText(t *testing.T) {
	db := openSQLite(t)
	s, err := audit.NewSQL(context.Background(), db, audit.SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := event("nul", 1)
	e.Detail = "a\x00b\xffc"
	if err := s.WriteDurable(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	got, err := s.Query(context.Background(), audit.Filter{CorrelationID: "nul"})
	if err != nil || len(got) != 1 {
		t.Fatalf("Query = %v, %v", got, err)
	}
	if want := "a\uFFFDb\uFFFDc"; got[0].Detail != want {
		t.Errorf("detail = %q, want %q", got[0].Detail, want)
	}
	if err := s.Write(context.Background(), &audit.Event{Time: t0, Phase: audit.PhaseOutcome}); !errors.Is(err, audit.ErrInvalidEvent) {
		t.Errorf("Write without correlation id = %v, want ErrInvalidEvent", err)
	}
}

// TestSQLiteConcurrentWriters: 16 goroutines, batched and durable writes
// mixed, nothing lost.
func TestSQLiteConcurrentWriters(t *testing.T) {
	const writers, each = 16, 500
	db := openSQLite(t)
	s, err := audit.NewSQL(context.Background(), db, audit.SQLite, &audit.SQLOptions{QueueSize: 64, BatchSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				e := event(fmt.Sprintf("w%d-%d", w, i), i)
				write := s.Write
				if i%100 == 0 {
					write = s.WriteDurable
				}
				if err := write(context.Background(), e); err != nil {
					t.Errorf("Write: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var n, distinct int
	if err := db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT correlation_id) FROM audit_log`).Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n != writers*each || distinct != n {
		t.Errorf("audit_log has %d rows (%d distinct), want %d", n, distinct, writers*each)
	}
	if st := s.Stats(); st.Rows != writers*each || st.Lost != 0 {
		t.Errorf("Stats = %+v", st)
	}
}

// TestSQLBlocksWhenFullAndHonoursContext: a full queue makes Write wait for
// room and give up with the context, never drop.
func TestSQLBlocksWhenFullAndHonoursContext(t *testing.T) {
	db := openSQLite(t)
	var errs []error
	var mu sync.Mutex
	s, err := audit.NewSQL(context.Background(), db, audit.SQLite, &audit.SQLOptions{QueueSize: 1, BatchSize: 1,
		OnError: func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	// Hold the database's write lock so the background writer stalls.
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var accepted int
	var werr error
	for i := range 10 {
		if werr = s.Write(ctx, event(fmt.Sprint(i), i)); werr != nil {
			break
		}
		accepted++
	}
	if !errors.Is(werr, context.DeadlineExceeded) {
		t.Fatalf("Write on a stalled sink = %v after %d events, want context.DeadlineExceeded", werr, accepted)
	}
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var n int
	db.QueryRow(`SELECT COUNT(*) FROM audit_log`).Scan(&n)
	if n != accepted {
		t.Errorf("audit_log has %d rows, want the %d accepted events", n, accepted)
	}
}
