package audit

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestReview26CloseWithWriterBlockedOnFullQueue: Close while the database
// cannot take rows and a Write with no deadline waits for room in a full
// queue. Close took the sink's lock before it told the writer to give up,
// and that lock waited for the blocked Write, which waited for the writer,
// which retried for as long as the database could not take rows: Close
// never returned.
func TestReview26CloseWithWriterBlockedOnFullQueue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "full.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(20)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := NewSQL(context.Background(), db, SQLite, &SQLOptions{QueueSize: 1, OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	release := func() { conn.ExecContext(ctx, "ROLLBACK") }
	// The writer takes the first, one waits in the queue, the third
	// blocks (no deadline: the guard's own contexts may have none).
	wrote := make(chan error, 3)
	for i := range 3 {
		go func() { wrote <- s.Write(ctx, rvEvent(fmt.Sprintf("blocked-%d", i), i)) }()
	}
	time.Sleep(200 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err == nil {
			t.Errorf("Close = nil while the database could take no row, want an error counting the lost events")
		}
	case <-time.After(4 * time.Second):
		t.Errorf("Close did not return within 4s while the database could take no row and a Write waited for room")
		release()
		<-closed
	}
	release()
	var queued uint64
	for range 3 {
		switch err := <-wrote; err {
		case nil:
			queued++
		case ErrClosed:
		default:
			t.Errorf("Write = %v", err)
		}
	}
	if st := s.Stats(); st.Rows+st.Lost != queued || st.Lost == 0 {
		t.Errorf("Stats = %+v after %d events queued, want each committed or counted lost, some lost", st, queued)
	}
}
