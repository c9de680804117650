package audit

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestSQLiteWriteDurableReportsFullDisk checks that a WriteDurable on
// SQLite reports a database that cannot take the row (its disk full: here
// max_page_count reached, SQLITE_FULL) instead of waiting for as long as
// the failure lasts. The writer retries such a failure of the moment
// without end, which is right for the events queued by Write, but the
// WriteDurable waiting for it never returned: the guard waits with a
// context that never ends (context.WithoutCancel), so a write tool's call
// hung instead of being refused with AUDIT_UNAVAILABLE, as a JSONL sink
// on a full disk refuses it.
func TestSQLiteWriteDurableReportsFullDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "full.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=max_page_count(64)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var nErr atomic.Int64
	s, err := NewSQL(context.Background(), db, SQLite, &SQLOptions{OnError: func(error) { nErr.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	ok := rvEvent("fits", 1)
	if err := s.WriteDurable(context.Background(), ok); err != nil {
		t.Fatalf("WriteDurable of a small event: %v", err)
	}
	big := rvEvent("too-big", 2)
	big.Detail = strings.Repeat("x", 1<<20) // 256 pages: past max_page_count
	done := make(chan error, 1)
	go func() { done <- s.WriteDurable(context.Background(), big) }()
	returned := false
	select {
	case err := <-done:
		returned = true
		if err == nil {
			t.Errorf("WriteDurable on a full database = nil")
		}
	case <-time.After(5 * time.Second):
		t.Errorf("WriteDurable on a full database has not returned after 5s (%d errors reported to OnError)", nErr.Load())
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err == nil || !strings.Contains(err.Error(), "1 events not recorded") {
			t.Errorf("Close = %v, want the event not recorded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	if !returned {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("WriteDurable still waiting after Close")
		}
	}
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM audit_log`).Scan(&n); err != nil || n != 1 {
		t.Errorf("audit_log: %d rows (%v), want 1", n, err)
	}
}
