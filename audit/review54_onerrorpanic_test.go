package audit_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testlog"
)

// TestReview54SQLOnErrorPanic: a SQL sink calls OnError on its writer's
// goroutine, where a panic of OnError's ended the process, with every event
// queued. It is now logged to slog.Default, and the writer goes on: the
// batch that failed is retried, and every event is recorded once the
// database takes writes again.
func TestReview54SQLOnErrorPanic(t *testing.T) {
	logged := testlog.CaptureDefault(t)

	path := filepath.Join(t.TempDir(), "audit.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(20)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	var calls atomic.Int64
	s, err := audit.NewSQL(ctx, db, audit.SQLite, &audit.SQLOptions{OnError: func(err error) {
		calls.Add(1)
		panic("OnError's bug: " + err.Error())
	}})
	if err != nil {
		t.Fatal(err)
	}

	// Another connection holds the write lock: the writer's batches fail
	// past the busy timeout, and it reports each failure to OnError.
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	const n = 30
	for i := range n {
		if err := s.Write(ctx, diskEvent(fmt.Sprintf("e-%d", i), 10)); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); calls.Load() < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("OnError called %d times in 10 s while the database was locked, want 2 or more", calls.Load())
		}
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Errorf("Flush once the lock was released: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if st := s.Stats(); st.Lost != 0 {
		t.Errorf("Stats.Lost = %d, want 0", st.Lost)
	}
	var got int
	if err := db.QueryRow(`SELECT COUNT(*) FROM audit_log`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Errorf("%d events recorded, want %d", got, n)
	}
	out := logged.String()
	if k := strings.Count(out, "audit: the SQL sink's OnError panicked"); int64(k) != calls.Load() {
		t.Errorf("%d panics of OnError logged, want %d (one per call):\n%.3000s", k, calls.Load(), out)
	}
	if !strings.Contains(out, "OnError's bug") || !strings.Contains(out, "goroutine") {
		t.Errorf("the log does not give the panic's value and stack:\n%.3000s", out)
	}
}
