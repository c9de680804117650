package audit

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rvEvent is a valid event with correlation id id.
func rvEvent(id string, i int) *Event {
	return &Event{
		Time: time.Date(2026, 7, 28, 0, 0, 0, i, time.UTC), CorrelationID: id, SessionID: "s",
		Subject: "alice", Tool: "search_docs", Class: "read", Phase: PhaseOutcome, Allowed: true,
		LatencyMS: 0.5,
	}
}

// rvPanicky is an Args value whose JSON encoding panics (a caller's type
// with a buggy MarshalJSON).
type rvPanicky struct{}

func (rvPanicky) MarshalJSON() ([]byte, error) { panic("boom") }

// TestJSONLPanicInEncodingKeepsSinkUsable: a JSONL write encodes the event
// under the sink's lock; an Args value whose MarshalJSON panics (recovered
// by the caller, as net/http or a recover middleware does) must leave the
// lock released and the buffer as it was, or every later Write, Flush,
// Close and the background flusher would block forever.
func TestJSONLPanicInEncodingKeepsSinkUsable(t *testing.T) {
	s, err := OpenJSONL(filepath.Join(t.TempDir(), "a.jsonl"), &JSONLOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() { _ = recover() }()
		e := rvEvent("p", 1)
		e.Args = map[string]any{"x": rvPanicky{}}
		_ = s.Write(context.Background(), e)
	}()
	done := make(chan error, 1)
	go func() { done <- s.Write(context.Background(), rvEvent("after", 2)) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Write after a recovered encoding panic = %v", err)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Write after a recovered panic in the event's encoding blocks: the sink's mutex was left locked")
	}
}

// rvSwitch makes the connections of rvConnector fail (the database is
// unreachable) while down is set.
type rvSwitch struct{ down atomic.Bool }

var errRvDown = errors.New("rv: database down")

type rvConnector struct {
	d   driver.Driver
	dsn string
	sw  *rvSwitch
}

func (c rvConnector) Connect(context.Context) (driver.Conn, error) {
	if c.sw.down.Load() {
		return nil, errRvDown
	}
	dc, err := c.d.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return rvConn{dc, c.sw}, nil
}

func (c rvConnector) Driver() driver.Driver { return c.d }

type rvConn struct {
	driver.Conn
	sw *rvSwitch
}

func (c rvConn) Prepare(q string) (driver.Stmt, error) {
	if c.sw.down.Load() {
		return nil, driver.ErrBadConn
	}
	return c.Conn.Prepare(q)
}

func (c rvConn) Begin() (driver.Tx, error) {
	if c.sw.down.Load() {
		return nil, driver.ErrBadConn
	}
	//lint:ignore SA1019 driver.Conn's own method, which the wrapper must pass on
	return c.Conn.Begin()
}

func (c rvConn) Ping(context.Context) error {
	if c.sw.down.Load() {
		return driver.ErrBadConn
	}
	return nil
}

// TestSQLCloseGivesUpWhileDatabaseDown: Close documents that "if the
// database keeps failing, Close gives up after a few attempts and returns
// an error counting the events lost". A writer already retrying an
// unreachable database when Close is called must learn of it, or Close
// would block for as long as the outage lasts.
func TestSQLCloseGivesUpWhileDatabaseDown(t *testing.T) {
	plain, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	sw := &rvSwitch{}
	dsn := "file:" + filepath.Join(t.TempDir(), "down.db") + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_txlock=immediate"
	db := sql.OpenDB(rvConnector{d: plain.Driver(), dsn: dsn, sw: sw})
	defer db.Close()
	var nErr atomic.Int64
	s, err := NewSQL(context.Background(), db, SQLite, &SQLOptions{OnError: func(error) { nErr.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	sw.down.Store(true)
	if err := s.Write(context.Background(), rvEvent("during-outage", 1)); err != nil {
		t.Fatal(err)
	}
	// Past the three batch attempts: the writer now retries the row while
	// the database does not answer a ping.
	deadline := time.Now().Add(3 * time.Second)
	for nErr.Load() < 5 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err == nil {
			t.Errorf("Close during an outage = nil, want an error counting the lost event")
		}
	case <-time.After(3 * time.Second):
		t.Errorf("Close did not return within 3s while the database is down (errors reported: %d)", nErr.Load())
		sw.down.Store(false) // let the writer finish, so the test ends
		<-closed
	}
}

// TestSQLiteBusyIsNotRefusal: a row that fails while the database answers
// a ping is refused by the database itself and dropped, but SQLITE_BUSY
// (another connection or process holding the write lock longer than
// busy_timeout: a backup, a VACUUM, a long migration) is a failure of the
// moment: the events must be retried until the lock is released, not
// dropped.
func TestSQLiteBusyIsNotRefusal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(20)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := NewSQL(context.Background(), db, SQLite, &SQLOptions{OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	const n = 5
	for i := range n {
		if err := s.Write(ctx, rvEvent(fmt.Sprintf("busy-%d", i), i)); err != nil {
			t.Fatal(err)
		}
	}
	// The lock is held for at most one second.
	deadline := time.Now().Add(time.Second)
	for s.Stats().Lost < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	flushErr := s.Flush(ctx)
	var count int
	if err := db.QueryRow(`SELECT COUNT(*) FROM audit_log`).Scan(&count); err != nil {
		t.Fatal(err)
	}
	if count != n || s.Stats().Lost != 0 {
		t.Errorf("after the write lock was held ~1s: audit_log has %d rows, Stats = %+v, Flush = %v; want all %d events recorded and none lost",
			count, s.Stats(), flushErr, n)
	}
}

// TestJSONLWriteBufferedDespiteEndedContext: a buffered Write whose event
// fills the buffer flushes it; if its context ends while another flush
// holds the file, the event is still buffered and is written later, so the
// Write must succeed (a caller that retried a failure would record the
// event twice).
func TestJSONLWriteBufferedDespiteEndedContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1, BufferSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.ioSem <- struct{}{} // another flush is writing
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Write(ctx, rvEvent("once", 1)); err != nil {
		t.Errorf("buffered Write with an ended context while a flush runs = %v, want nil (the event is buffered)", err)
	}
	<-s.ioSem
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"correlation_id":"once"`); n != 1 {
		t.Errorf("the event is in the file %d times, want 1:\n%s", n, b)
	}
}
