package audit_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// openSQLiteCache opens a database as OpenSQLite does, with a page cache of
// cacheKiB KiB.
func openSQLiteCache(t *testing.T, cacheKiB int) *sql.DB {
	t.Helper()
	db, _ := openSQLitePragmas(t, fmt.Sprintf("&_pragma=cache_size(-%d)", cacheKiB))
	return db
}

// floodEvents returns n events of 64 sessions, 16 subjects and 8 tools.
func floodEvents(prefix string, n int) []audit.Event {
	base := time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC)
	out := make([]audit.Event, n)
	for i := range out {
		out[i] = audit.Event{
			Time: base.Add(time.Duration(i) * time.Microsecond), CorrelationID: fmt.Sprintf("%s-%05d", prefix, i),
			SessionID: fmt.Sprintf("sess-%02d", i%64), Subject: fmt.Sprintf("user%02d", i/64%16),
			Tool: fmt.Sprintf("tool_%d", i%8), Phase: audit.PhaseOutcome, Allowed: true,
		}
	}
	return out
}

// TestSQLiteTransactionGrows: events queued faster than the writer inserts
// them (here: while another connection holds the write lock) go into
// transactions larger than one round of 1024 rows, up to BatchSize, and
// up to about half the page cache (past 1 MiB of rows).
func TestSQLiteTransactionGrows(t *testing.T) {
	const n = 5000
	for _, tc := range []struct {
		name       string
		cacheKiB   int
		batch      int
		detail     int // bytes of each event's Detail
		minBatches uint64
		maxBatches uint64
	}{
		// All in one transaction, but for a first round the writer may
		// have taken before the rest was queued.
		{name: "default", cacheKiB: 32 << 10, minBatches: 1, maxBatches: 2},
		{name: "batch_size_2000", cacheKiB: 32 << 10, batch: 2000, minBatches: 3, maxBatches: 4},
		// 4 MiB of cache and rows of about 1.3 KB (counted): a
		// transaction stops after the round that passes 2 MiB, its
		// second round of 1024 rows.
		{name: "small_cache", cacheKiB: 4 << 10, detail: 1000, minBatches: 3, maxBatches: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := openSQLiteCache(t, tc.cacheKiB)
			s, err := audit.NewSQL(ctx, db, audit.SQLite, &audit.SQLOptions{BatchSize: tc.batch})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			evs := floodEvents("g", n)
			for i := range evs {
				evs[i].Detail = strings.Repeat("d", tc.detail)
			}
			writeUnderLock(t, db, s, evs)
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			st := s.Stats()
			if st.Rows != n || st.Batches < tc.minBatches || st.Batches > tc.maxBatches {
				t.Errorf("Stats = %+v, want %d rows in %d to %d transactions", st, n, tc.minBatches, tc.maxBatches)
			}
			var count, ordered int
			if err := db.QueryRow(`SELECT COUNT(*), COUNT(*) FILTER (WHERE correlation_id = printf('g-%05d', id - 1)) FROM audit_log`).Scan(&count, &ordered); err != nil {
				t.Fatal(err)
			}
			if count != n || ordered != n {
				t.Errorf("audit_log has %d rows, %d in the order written; want %d", count, ordered, n)
			}
		})
	}
}

// TestSQLiteDurableCommitsEarly: a WriteDurable that arrives while the
// writer's transaction could keep growing (thousands of events queued) is
// committed after at most the round being inserted and its own, not with
// the whole queue.
func TestSQLiteDurableCommitsEarly(t *testing.T) {
	const n = 6000
	ctx := context.Background()
	db := openSQLite(t)
	s := newSQLiteSink(t, db, nil)
	release := holdWriteLock(t, db)
	evs := floodEvents("q", n)
	for i := range evs {
		if err := s.Write(ctx, &evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		err  error
		rows uint64 // committed when WriteDurable returned
	}
	done := make(chan result, 1)
	go func() {
		err := s.WriteDurable(ctx, event("durable", 1))
		done <- result{err, s.Stats().Rows}
	}()
	time.Sleep(50 * time.Millisecond) // WriteDurable waits for the writer
	release()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	// The writer's first round (up to 1024 rows, taken before the lock was
	// released) and the round of the WriteDurable.
	if r.rows > 2*1024 {
		t.Errorf("WriteDurable returned after %d rows were committed, want at most %d", r.rows, 2*1024)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Rows != n+1 {
		t.Errorf("Stats = %+v, want %d rows", st, n+1)
	}
}

// TestSQLiteRefusedRowInGrownTransaction: a row the database refuses in a
// transaction grown to 3000 rows costs its round of 1024 rows inserted one
// by one, not the 3000: the other rounds commit in a transaction each, and
// every row but the refused one is recorded.
func TestSQLiteRefusedRowInGrownTransaction(t *testing.T) {
	const n = 3000
	ctx := context.Background()
	db := openSQLite(t)
	s := newSQLiteSink(t, db, &audit.SQLOptions{OnError: func(error) {}})
	refuseBad(t, db)
	evs := floodEvents("r", n)
	evs[1500].CorrelationID = "bad"
	writeUnderLock(t, db, s, evs)
	if err := s.Flush(ctx); err == nil || !strings.Contains(err.Error(), "refused by trigger") {
		t.Errorf("Flush = %v, want the trigger's error", err)
	}
	st := s.Stats()
	// One transaction per round that commits (at most 3, the first
	// round possibly apart) and per row of the round that does not.
	if st.Rows != n-1 || st.Lost != 1 || st.Batches > 3+1024 {
		t.Errorf("Stats = %+v, want %d rows, 1 lost, at most %d transactions", st, n-1, 3+1024)
	}
	var count int
	if err := db.QueryRow(`SELECT COUNT(*) FROM audit_log WHERE correlation_id != 'bad'`).Scan(&count); err != nil {
		t.Fatal(err)
	}
	if count != n-1 {
		t.Errorf("audit_log has %d rows, want %d", count, n-1)
	}
}
