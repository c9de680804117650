package audit_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview23OneConnectionPool: a *sql.DB of one connection
// (db.SetMaxOpenConns(1), the usual advice for a SQLite driver) through
// database/sql (a driver other than modernc.org/sqlite). The writer
// prepared each new size of INSERT on the pool while its transaction held
// the pool's only connection: the first batch waited for itself for ever,
// and every Flush, and Close, with it.
func TestReview23OneConnectionPool(t *testing.T) {
	db := openWrappedSQLite(t)
	db.SetMaxOpenConns(1)
	review23OnePool(t, db, audit.SQLite)
	if n := review23Count(t, db); n != review23Events {
		t.Errorf("%d rows, want %d", n, review23Events)
	}
}

// TestReview23OneConnectionPoolNative: the same through the native SQLite
// writer, whose background checkpointer and WriteDurable calls share the
// one connection with it.
func TestReview23OneConnectionPoolNative(t *testing.T) {
	db := openSQLite(t)
	db.SetMaxOpenConns(1)
	review23OnePool(t, db, audit.SQLite)
	if n := review23Count(t, db); n != review23Events {
		t.Errorf("%d rows, want %d", n, review23Events)
	}
}

// review23Events is how many events review23OnePool writes.
const review23Events = 4 * 60

// review23OnePool writes review23Events events to a new sink on db, from
// four writers at once (Write, and every third one WriteDurable) while a
// reader queries, then flushes and closes the sink, each within 10 s.
func review23OnePool(t *testing.T, db *sql.DB, d audit.Dialect) {
	t.Helper()
	s, err := audit.NewSQL(context.Background(), db, d, &audit.SQLOptions{OnError: func(err error) { t.Log(err) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range review23Events / 4 {
				e := audit.Event{Time: base.Add(time.Duration(w*1000+i) * time.Millisecond),
					CorrelationID: fmt.Sprintf("one-%d-%03d", w, i), Tool: "t", Phase: audit.PhaseOutcome}
				write := s.Write
				if i%3 == 0 {
					write = s.WriteDurable
				}
				if err := write(ctx, &e); err != nil {
					t.Errorf("writer %d, event %d: %v", w, i, err)
					return
				}
			}
		})
	}
	var readers sync.WaitGroup
	done := make(chan struct{})
	readers.Go(func() {
		// Queries while the writers write, at least five.
		for i := 0; ; i++ {
			select {
			case <-done:
				if i >= 5 {
					return
				}
			default:
			}
			if _, err := s.Query(ctx, audit.Filter{Tool: "t", Limit: 10}); err != nil {
				t.Errorf("Query: %v", err)
				return
			}
		}
	})
	wg.Wait()
	close(done)
	readers.Wait()
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Close did not return")
	}
}

func review23Count(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM audit_log WHERE tool = 't'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestReview23OpenSQLiteInMemory: OpenSQLite(":memory:") (and "", SQLite's
// temporary database) opened a database of its own for every connection
// of the pool: once the pool had two (a Query while the writer inserts,
// the background checkpointer, a WriteDurable), the writer's connection
// could lack the table ("no such table: audit_log": the events counted
// lost) and a Query read another, empty database. The pool of such a
// database now holds one connection, kept open.
func TestReview23OpenSQLiteInMemory(t *testing.T) {
	for _, path := range []string{":memory:", ""} {
		t.Run(fmt.Sprintf("%q", path), func(t *testing.T) {
			db, err := audit.OpenSQLite(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			review23OnePool(t, db, audit.SQLite)
			if n := review23Count(t, db); n != review23Events {
				t.Errorf("%d rows, want %d", n, review23Events)
			}
		})
	}
}
