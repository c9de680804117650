package audit_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// openSQLiteAutockpt opens a WAL database whose connections checkpoint
// automatically every interval frames (0: never), one connection at a time
// when single.
func openSQLiteAutockpt(t *testing.T, interval int, single bool) (*sql.DB, string) {
	t.Helper()
	db, path := openSQLitePragmas(t, fmt.Sprintf("&_pragma=wal_autocheckpoint(%d)", interval))
	if single {
		db.SetMaxOpenConns(1)
	}
	return db, path
}

// writeVaried writes n events of 64 sessions through s and flushes.
func writeVaried(t *testing.T, s *audit.SQLSink, n int) {
	t.Helper()
	ctx := context.Background()
	e := benchEvent()
	t0 := e.Time
	for i := range n {
		e.CorrelationID = fmt.Sprintf("ck-%08x", i)
		e.SessionID = fmt.Sprintf("sess-%02d", i%64)
		e.Time = t0.Add(time.Duration(i) * time.Microsecond)
		if err := s.Write(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSQLiteBackgroundCheckpoint: the batch writer leaves the WAL
// checkpoints to the background (they run), the WAL stays bounded by the
// writer's own checkpoint every SQLiteCkptSyncEvery intervals, the
// connection gets its wal_autocheckpoint back, and every row is there.
func TestSQLiteBackgroundCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name   string
		single bool
	}{
		{name: "pool", single: false},
		{name: "one_connection", single: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const interval, rows = 20, 8000
			ctx := context.Background()
			db, path := openSQLiteAutockpt(t, interval, tc.single)
			s, err := audit.NewSQL(ctx, db, audit.SQLite, &audit.SQLOptions{BatchSize: 256})
			if err != nil {
				t.Fatal(err)
			}
			writeVaried(t, s, rows)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if n := audit.SQLiteCheckpoints(s); n == 0 {
				t.Errorf("no checkpoint ran in the background")
			}
			var got int
			if err := db.QueryRow(`PRAGMA wal_autocheckpoint`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != interval {
				t.Errorf("wal_autocheckpoint after the batches = %d, want %d", got, interval)
			}
			var pageSize int64
			if err := db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
				t.Fatal(err)
			}
			// At most SQLiteCkptSyncEvery+1 intervals, plus the frames of
			// a batch of 256 rows (table and five indexes, 64 sessions)
			// and of the background checkpoint's lag: 600 frames.
			limit := (int64(audit.SQLiteCkptSyncEvery+1)*interval + 600) * (pageSize + 24)
			fi, err := os.Stat(path + "-wal")
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() > limit {
				t.Errorf("WAL of %d bytes, want at most %d", fi.Size(), limit)
			}
			var count int
			if err := db.QueryRow(`SELECT count(*) FROM audit_log`).Scan(&count); err != nil {
				t.Fatal(err)
			}
			if count != rows {
				t.Errorf("%d rows, want %d", count, rows)
			}
		})
	}
}

// TestSQLiteCheckpointOff: a connection whose automatic checkpoint the user
// turned off gets no checkpoint from the sink either.
func TestSQLiteCheckpointOff(t *testing.T) {
	ctx := context.Background()
	db, _ := openSQLiteAutockpt(t, 0, false)
	s, err := audit.NewSQL(ctx, db, audit.SQLite, &audit.SQLOptions{BatchSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	writeVaried(t, s, 5000)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := audit.SQLiteCheckpoints(s); n != 0 {
		t.Errorf("%d checkpoints, want none", n)
	}
	var busy, log, ckpt int
	if err := db.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &ckpt); err != nil {
		t.Fatal(err)
	}
	if log < 500 { // never restarted: 5000 rows make over 1000 frames
		t.Errorf("the WAL holds %d frames, want it never restarted", log)
	}
}

// TestSQLiteFlushAfterLoss: a Flush reports the events lost by a batch
// committed before the Flush was queued (before: nil, as the Flush's own
// batch, empty, had not failed).
func TestSQLiteFlushAfterLoss(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	s := newSQLiteSink(t, db, &audit.SQLOptions{OnError: func(error) {}})
	refuseBad(t, db)
	if err := s.Write(ctx, event("bad", 1)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().Lost == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the refused event was never counted lost")
		}
		time.Sleep(time.Millisecond)
	}
	if err := s.Flush(ctx); err == nil || !strings.Contains(err.Error(), "refused by trigger") {
		t.Errorf("Flush = %v, want the trigger's error", err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Errorf("second Flush = %v, want nil (reported once)", err)
	}
}

// TestSQLiteWriteDurableThroughWriter: WriteDurable rows go into the
// writer's batches among queued events; a row the database refuses fails
// its own WriteDurable only, and the batch's other rows are recorded.
func TestSQLiteWriteDurableThroughWriter(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	s := newSQLiteSink(t, db, &audit.SQLOptions{OnError: func(error) {}})
	refuseBad(t, db)
	const queued = 3000
	done := make(chan error, 1)
	go func() {
		e := benchEvent()
		for i := range queued {
			e.CorrelationID = fmt.Sprintf("q-%05d", i)
			if err := s.Write(ctx, e); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := range 20 {
		id := fmt.Sprintf("d-%02d", i)
		if i == 7 {
			id = "bad"
		}
		err := s.WriteDurable(ctx, event(id, i))
		if id == "bad" {
			if err == nil || !strings.Contains(err.Error(), "refused by trigger") {
				t.Errorf("WriteDurable(bad) = %v, want the trigger's error", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("WriteDurable(%s) = %v", id, err)
		}
		// Committed on return: readable now, without a Flush.
		got, err := s.Query(ctx, audit.Filter{CorrelationID: id})
		if err != nil || len(got) != 1 {
			t.Fatalf("Query(%s) = %d events, %v; want 1", id, len(got), err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil && !strings.Contains(err.Error(), "refused by trigger") {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Rows != queued+19 || st.Lost != 1 {
		t.Errorf("Stats = %+v, want %d rows and 1 lost", st, queued+19)
	}
}
