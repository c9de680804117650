//go:build linux

package audit

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"

	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// review38SQLite opens a new SQLite database file and a sink on it, both
// closed when t ends (the sink first).
func review38SQLite(t *testing.T, opts *SQLOptions) (*sql.DB, *SQLSink) {
	t.Helper()
	db, err := OpenSQLite(filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := NewSQL(context.Background(), db, SQLite, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { review36Within(t, "Close", func() { s.Close() }) })
	return db, s
}

// review38NoWait opens a new SQLite database file in WAL mode whose
// connections wait for no lock (busy timeout 0), closed when t ends, and
// returns it with the DSN of its file (without the busy timeout) for
// other connections.
func review38NoWait(t *testing.T) (db *sql.DB, dsn string) {
	t.Helper()
	dsn = "file:" + filepath.Join(t.TempDir(), "audit.db") + "?_pragma=journal_mode(WAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn+"&_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, dsn
}

// review38Lock takes the write lock of the database at dsn (as
// review38NoWait returned it) on a connection of its own, which waits up to
// 10 s for it, and returns that connection: the caller ends the lock with
// ROLLBACK. The connection and its pool are closed when the test ends.
func review38Lock(t *testing.T, dsn string) *sql.Conn {
	t.Helper()
	ctx := context.Background()
	other, err := sql.Open("sqlite", dsn+"&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	lock, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close() })
	if _, err := lock.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	return lock
}

// review38Event is a small valid event named id, at sec seconds past a
// fixed instant.
func review38Event(id string, sec int) *Event {
	return &Event{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(sec) * time.Second),
		CorrelationID: id, Phase: PhaseOutcome, Tool: "refund", Subject: "alice",
		RequestID: "req-" + id, ParentID: "parent-" + id}
}

// review38Put writes events to s through Write and flushes them.
func review38Put(t *testing.T, s *SQLSink, events ...*Event) {
	t.Helper()
	ctx := context.Background()
	for _, e := range events {
		if err := s.Write(ctx, e); err != nil {
			t.Fatalf("Write(%s): %v", e.CorrelationID, err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// review38IDs returns the correlation ids of events, in order.
func review38IDs(events []Event) []string {
	var ids []string
	for _, e := range events {
		ids = append(ids, e.CorrelationID)
	}
	return ids
}

// TestReview38QueryBoundsPastInt64: a Filter bound just past the instants
// Unix nanoseconds hold (years 1677 to 2262) selects as Filter.Match does:
// every stored event is before an Until past the end and at or after a
// Since before the start. An Until that wrapped around to a negative
// number of nanoseconds would select nothing, and an operator looking for
// denials "until the end of time" would be told there are none.
func TestReview38QueryBoundsPastInt64(t *testing.T) {
	_, s := review38SQLite(t, nil)
	review38Put(t, s, review38Event("a", 0), review38Event("b", 1))
	end := time.Unix(0, math.MaxInt64)
	start := time.Unix(0, math.MinInt64)
	for _, tc := range []struct {
		name string
		f    Filter
	}{
		{name: "until_end", f: Filter{Until: end}},
		{name: "until_end_plus_1ns", f: Filter{Until: end.Add(time.Nanosecond)}},
		{name: "until_end_plus_half_second", f: Filter{Until: end.Add(500 * time.Millisecond)}},
		{name: "until_end_plus_999ms", f: Filter{Until: end.Add(999 * time.Millisecond)}},
		{name: "until_end_plus_hour", f: Filter{Until: end.Add(time.Hour)}},
		{name: "until_end_plus_half_second_other_zone", f: Filter{Until: end.Add(500 * time.Millisecond).In(time.FixedZone("", 5*3600))}},
		{name: "since_start_minus_half_second", f: Filter{Since: start.Add(-500 * time.Millisecond)}},
		{name: "both", f: Filter{Since: start.Add(-time.Nanosecond), Until: end.Add(time.Nanosecond)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Query(context.Background(), tc.f)
			if err != nil {
				t.Fatalf("Query(%+v): %v", tc.f, err)
			}
			var want []string
			for _, e := range []*Event{review38Event("a", 0), review38Event("b", 1)} {
				if tc.f.Match(e) {
					want = append(want, e.CorrelationID)
				}
			}
			if len(want) != 2 {
				t.Fatalf("Filter.Match(%+v) keeps %v, want both events", tc.f, want)
			}
			if diff := cmp.Diff(want, review38IDs(got)); diff != "" {
				t.Errorf("Query(%+v) (-want +got):\n%s", tc.f, diff)
			}
		})
	}
}

// TestReview38QueryFailureIsAnError: a query the database cannot run (a
// database without the audit table, one closed under the sink) returns an
// error, never an empty answer with a nil error: an operator asking the
// wrong database for the denials of a session must not be told there
// were none.
func TestReview38QueryFailureIsAnError(t *testing.T) {
	ctx := context.Background()
	t.Run("no_table", func(t *testing.T) {
		db, err := OpenSQLite(filepath.Join(t.TempDir(), "empty.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		got, err := QuerySQL(ctx, db, SQLite, Filter{Subject: "alice"})
		if err == nil {
			t.Errorf("QuerySQL of a database without audit_log = %v, nil; want an error", got)
		}
	})
	t.Run("database_closed", func(t *testing.T) {
		db, s := review38SQLite(t, nil)
		review38Put(t, s, review38Event("a", 0))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := s.Query(ctx, Filter{})
		if err == nil {
			t.Errorf("Query with its *sql.DB closed = %v, nil; want an error", got)
		}
	})
}

// TestReview38QuerySQLEmptyVersionTable: QuerySQL reads a table whose
// audit_schema_version holds no row as it reads one without that table,
// as a table of the current schema: the request and parent ids come back.
// (A copy of the table whose version rows were left behind, or a schema
// made by hand.) Taking it for a table before version 4 would read every
// request id as "" and a filter by request id would find nothing.
func TestReview38QuerySQLEmptyVersionTable(t *testing.T) {
	ctx := context.Background()
	db, s := review38SQLite(t, nil)
	review38Put(t, s, review38Event("a", 0), review38Event("b", 1))
	if _, err := db.Exec(`DELETE FROM audit_schema_version`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    Filter
		want []string
	}{
		{name: "all", f: Filter{}, want: []string{"a/req-a/parent-a", "b/req-b/parent-b"}},
		{name: "by_request_id", f: Filter{RequestID: "req-b"}, want: []string{"b/req-b/parent-b"}},
		{name: "by_parent_id", f: Filter{ParentID: "parent-a"}, want: []string{"a/req-a/parent-a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs, err := QuerySQL(ctx, db, SQLite, tc.f)
			if err != nil {
				t.Fatalf("QuerySQL(%+v): %v", tc.f, err)
			}
			var got []string
			for _, e := range evs {
				got = append(got, e.CorrelationID+"/"+e.RequestID+"/"+e.ParentID)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("QuerySQL(%+v) (-want +got):\n%s", tc.f, diff)
			}
		})
	}
}

// TestReview38QueryUnreadableRow: a row Query cannot turn back into an
// event (a column changed by hand or by another program: a time that is
// no number, roles or arguments that are not JSON) fails the query with
// an error naming it, instead of ending the answer early with a nil
// error: the events after it, denials among them, would be missing from
// what an operator takes for the whole trail.
func TestReview38QueryUnreadableRow(t *testing.T) {
	for _, tc := range []struct {
		name, set string
	}{
		{name: "time_not_a_number", set: `time_ns = 'soon'`},
		{name: "roles_not_json", set: `roles = '["admin"'`},
		{name: "args_not_json", set: `args = '{"a":'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, s := review38SQLite(t, nil)
			review38Put(t, s, review38Event("a", 0), review38Event("b", 1), review38Event("c", 2))
			if _, err := db.Exec(`UPDATE audit_log SET ` + tc.set + ` WHERE correlation_id = 'b'`); err != nil {
				t.Fatal(err)
			}
			got, err := s.Query(context.Background(), Filter{})
			if err == nil {
				t.Errorf("Query with row b's %s = %v, nil; want an error", tc.set, review38IDs(got))
			}
		})
	}
}

// TestReview38QueryCorruptPage: a page of the table that cannot be read
// (a disk that returns garbage, a file damaged by a copy) fails the query
// when the query reaches it, with an error, rather than ending the answer
// there with a nil error: the events stored in and after that page would
// be missing without a word.
func TestReview38QueryCorruptPage(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "audit.db")
	db, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSQL(ctx, db, SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	for i := range n {
		e := review38Event(fmt.Sprintf("c%03d", i), i)
		e.Detail = fmt.Sprintf("marker-%03d-", i) + strings.Repeat("x", 200)
		if err := s.Write(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Garbage over the page that holds the row of c250.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, []byte("marker-250-"))
	if at < 0 {
		t.Fatal("marker-250- not found in the database file")
	}
	const page = 4096
	start := at / page * page
	for i := start; i < start+page && i < len(b); i++ {
		b[i] = 0xff
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err = OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := QuerySQL(ctx, db, SQLite, Filter{})
	if err == nil {
		t.Errorf("QuerySQL of a table with a garbled page = %d events, nil; want an error", len(got))
	}
}

// TestReview38StalledBatchAnswersEachWaiter: a batch whose transaction
// failed is inserted row by row; when a row then stalls (the database
// full: an error of the moment, retried), the WriteDurable calls waiting
// for the rows before it are answered at once, each with its own row's
// fate: nil for a row committed, the refusal for a row the database
// refused. Here the batch holds a committed row, a refused one and one too
// large for the database, all but the last with a WriteDurable waiting (as
// when Close drains the queue). Telling the first the second's refusal
// would make a guard refuse a call whose record is safe; telling the
// second nil would let a call through whose record is lost.
func TestReview38StalledBatchAnswersEachWaiter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "full.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=max_page_count(64)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := NewSQL(context.Background(), db, SQLite, &SQLOptions{OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { review36Within(t, "Close", func() { s.Close() }) })
	if _, err := db.Exec(`CREATE TRIGGER refuse BEFORE INSERT ON audit_log WHEN NEW.correlation_id = 'bad'
BEGIN SELECT RAISE(ABORT, 'refused by trigger'); END`); err != nil {
		t.Fatal(err)
	}
	big := review38Event("big", 2)
	big.Detail = strings.Repeat("x", 1<<20) // 256 pages: past max_page_count
	var b writerBatch
	for _, e := range []*Event{review38Event("ok", 0), review38Event("bad", 1), big} {
		r, err := toRow(e, SQLite)
		if err != nil {
			t.Fatal(err)
		}
		b.rows = append(b.rows, r)
	}
	okDone, badDone := make(chan error, 1), make(chan error, 1)
	b.waiters = []waiter{{i: 0, ch: okDone}, {i: 1, ch: badDone}}
	// The writer's drain at Close: closing, so that the full database
	// costs the last row after a few attempts instead of for good.
	review36Within(t, "commitBatch", func() { s.commitBatch(&b, nil, true, true, nil) })
	if err := <-okDone; err != nil {
		t.Errorf("WriteDurable of the committed row ok = %v, want nil", err)
	}
	if err := <-badDone; err == nil || !strings.Contains(err.Error(), "refused by trigger") {
		t.Errorf("WriteDurable of the refused row bad = %v, want its refusal", err)
	}
	got, err := s.Query(context.Background(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ok"}, review38IDs(got)); diff != "" {
		t.Errorf("Query after the batch (-want +got):\n%s", diff)
	}
	if got, want := s.Stats(), (SQLStats{Rows: 1, Batches: 1, Lost: 2}); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}

// TestReview38KeepHashesShortArgs: Keep records ArgsSHA256(args) for every
// argument text that has a hash, the shortest (one byte: a tool called with
// a bare number) included, and none for empty arguments or JSON null; an
// ArgsSHA256 the caller set (an HMAC under its key) is kept as it is. A
// record without the hash of arguments the call had cannot be matched with
// the call.
func TestReview38KeepHashesShortArgs(t *testing.T) {
	ctx := context.Background()
	hmac := ArgsHMAC([]byte("key"), json.RawMessage(`7`))
	for _, tc := range []struct {
		name, args, set, want string
	}{
		{name: "one_byte", args: `7`, want: ArgsSHA256(json.RawMessage(`7`))},
		{name: "two_bytes", args: `{}`, want: ArgsSHA256(json.RawMessage(`{}`))},
		{name: "empty", args: ``, want: ""},
		{name: "null", args: `null`, want: ""},
		{name: "caller_hmac", args: `7`, set: hmac, want: hmac},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.args != "" && tc.args != "null" && tc.want == "" {
				t.Fatalf("ArgsSHA256(%q) is empty: the test checks nothing", tc.args)
			}
			_, s := review38SQLite(t, nil)
			e := review38Event("k", 0)
			e.ArgsSHA256 = tc.set
			if err := s.Keep(ctx, e, json.RawMessage(tc.args)); err != nil {
				t.Fatalf("Keep(args %q): %v", tc.args, err)
			}
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := s.Query(ctx, Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("Query after Keep = %d events, want 1", len(got))
			}
			if got[0].ArgsSHA256 != tc.want {
				t.Errorf("Keep(args %q) recorded ArgsSHA256 %q, want %q", tc.args, got[0].ArgsSHA256, tc.want)
			}
		})
	}
}

// review38Postgres starts a PostgreSQL server (stopped when t ends) and
// returns a new database of it.
func review38Postgres(t *testing.T) *sql.DB {
	t.Helper()
	pg := testsvc.StartPostgres(t)
	admin, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE review38"); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/review38?sslmode=disable", pg.Port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestReview38PostgresWriteDurable: on PostgreSQL, where WriteDurable
// inserts its event itself, each committed event counts in Stats().Rows as
// the background writer's do (and no batch): Close's watch takes a sink
// whose rows stopped counting for a silent server, and an operator reads
// Rows to see what was recorded. A WriteDurable that could not insert (its
// context ended before the statement was prepared, the server refused the
// row, the sink closed) returns an error and records nothing: a nil would
// let a call through unrecorded. A refused row is sent once.
func TestReview38PostgresWriteDurable(t *testing.T) {
	ctx := context.Background()
	db := review38Postgres(t)
	s, err := NewSQL(ctx, db, Postgres, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { review36Within(t, "Close", func() { s.Close() }) })
	// Before any other WriteDurable, so that its statement is prepared
	// under the ended context.
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.WriteDurable(ended, review38Event("ended", 0)); err == nil {
		t.Errorf("WriteDurable with an ended context = nil, want an error")
	}
	// A row the server refuses is refused once: it is not sent again.
	if _, err := db.Exec(`CREATE SEQUENCE tries;
CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM nextval('tries');
	IF NEW.correlation_id = 'bad' THEN RAISE EXCEPTION 'refused by trigger'; END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER refuse BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION refuse()`); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteDurable(ctx, review38Event("bad", 0)); err == nil || !strings.Contains(err.Error(), "refused by trigger") {
		t.Errorf("WriteDurable of a row the server refuses = %v, want the refusal", err)
	}
	var tries int
	if err := db.QueryRow(`SELECT last_value FROM tries`).Scan(&tries); err != nil {
		t.Fatal(err)
	}
	if tries != 1 {
		t.Errorf("the refused row was sent %d times, want 1", tries)
	}
	for i, id := range []string{"a", "b", "c"} {
		if err := s.WriteDurable(ctx, review38Event(id, i)); err != nil {
			t.Fatalf("WriteDurable(%s): %v", id, err)
		}
	}
	if got, want := s.Stats(), (SQLStats{Rows: 3}); got != want {
		t.Errorf("Stats() after three WriteDurable = %+v, want %+v", got, want)
	}
	got, err := s.Query(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, review38IDs(got)); diff != "" {
		t.Errorf("Query (-want +got):\n%s", diff)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteDurable(ctx, review38Event("late", 3)); !errors.Is(err, ErrClosed) {
		t.Errorf("WriteDurable after Close = %v, want ErrClosed", err)
	}
	if got, err := s.Query(ctx, Filter{CorrelationID: "late"}); err != nil || len(got) != 0 {
		t.Errorf("Query(late) after Close = %d events, %v; want none", len(got), err)
	}
}

// TestReview38FlushRefusals: a Flush that could not queue its marker
// returns why (ErrClosed after Close, the context's error when the queue
// stays full) instead of nil, which would tell a caller that every event
// it wrote is committed when none of that was checked.
func TestReview38FlushRefusals(t *testing.T) {
	ctx := context.Background()
	t.Run("closed", func(t *testing.T) {
		_, s := review38SQLite(t, nil)
		review38Put(t, s, review38Event("a", 0))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); !errors.Is(err, ErrClosed) {
			t.Errorf("Flush after Close = %v, want ErrClosed", err)
		}
	})
	t.Run("queue_full", func(t *testing.T) {
		// A sink whose writer never runs: its queue of one stays full.
		s := &SQLSink{queue: make(chan item, 1)}
		s.queue <- item{}
		ended, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.Flush(ended); !errors.Is(err, context.Canceled) {
			t.Errorf("Flush with the queue full and its context ended = %v, want context.Canceled", err)
		}
	})
}

// TestReview38RepeatedEventRecordedAgain: an event identical to one the
// table already holds (a client retrying a call with the same ids, in the
// same millisecond) is recorded again, in a batch of its own or among
// others: only a batch whose commit failed without an answer is looked
// for before it is inserted. A writer that took every batch repeating the
// last one for committed would drop the second record.
func TestReview38RepeatedEventRecordedAgain(t *testing.T) {
	_, s := review38SQLite(t, nil)
	e := review38Event("same", 0)
	review38Put(t, s, e)
	review38Put(t, s, e)
	review38Put(t, s, e, review38Event("other", 1), e)
	got, err := s.Query(context.Background(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"same", "same", "same", "same", "other"}
	if diff := cmp.Diff(want, review38IDs(got)); diff != "" {
		t.Errorf("Query after writing one event four times (-want +got):\n%s", diff)
	}
}

// TestReview38OnErrorToldOfFailedBatch: SQLOptions.OnError is called when
// a batch fails, before it is retried, even when the retry then commits
// it: here another connection holds the write lock (the sink's busy
// timeout is 0) until the writer has reported the failure. An operator
// whose OnError raises an alert must hear of a database that refuses the
// writer for a while, not only of rows lost.
func TestReview38OnErrorToldOfFailedBatch(t *testing.T) {
	ctx := context.Background()
	db, dsn := review38NoWait(t)
	reported := make(chan error, 1)
	released := make(chan struct{})
	s, err := NewSQL(ctx, db, SQLite, &SQLOptions{OnError: func(err error) {
		select {
		case reported <- err:
			<-released // the first report: hold the writer until the lock is gone
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { review36Within(t, "Close", func() { s.Close() }) })
	lock := review38Lock(t, dsn)
	if err := s.Write(ctx, review38Event("a", 0)); err != nil {
		t.Fatal(err)
	}
	var first error
	select {
	case first = <-reported:
	case <-time.After(10 * time.Second):
		t.Fatal("OnError not called within 10s while another connection held the write lock")
	}
	if _, err := lock.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	close(released)
	if want := "sql batch of 1 events (attempt 1)"; !strings.Contains(first.Error(), want) {
		t.Errorf("first error told to OnError = %v, want the failed batch's (%q)", first, want)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush after the lock was released: %v", err)
	}
	got, err := s.Query(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a"}, review38IDs(got)); diff != "" {
		t.Errorf("Query (-want +got):\n%s", diff)
	}
}

// TestReview38PostgresCommitAnswerLostCounts: when the answer to a batch's
// COMMIT is lost with its connection (a proxy ends it) after the server
// committed, the writer finds the rows there instead of inserting them
// again, and counts them as committed: Stats() reads one row in one batch,
// none lost. Rows is what Close's watch reads for progress, and what an
// operator reads to see that the trail is being written.
func TestReview38PostgresCommitAnswerLostCounts(t *testing.T) {
	ctx := context.Background()
	pg := testsvc.StartPostgres(t)
	admin, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE review38"); err != nil {
		t.Fatal(err)
	}
	ln, drop, dropped := testsvc.CommitAnswerDropper(t, pg.Port)
	db, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@%s/review38?sslmode=disable", ln.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := NewSQL(ctx, db, Postgres, &SQLOptions{OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer review36Within(t, "Close", func() { s.Close() })
	drop.Store(true)
	if err := s.Write(ctx, review38Event("a", 0)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if dropped.Load() != 1 {
		t.Fatalf("the proxy ended %d connections at a COMMIT's answer, want 1: no commit was cut", dropped.Load())
	}
	got, err := s.Query(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a"}, review38IDs(got)); diff != "" {
		t.Errorf("Query (-want +got):\n%s", diff)
	}
	if got, want := s.Stats(), (SQLStats{Rows: 1, Batches: 1}); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}

// TestReview38RefusedRowAmongRepeats: a batch the database refuses (one of
// its rows is refused) is inserted row by row, also when its first and
// last rows repeat records the table holds: only a commit that failed
// without an answer is looked for in the table. Taking such a batch for
// committed would drop its rows without counting them lost.
func TestReview38RefusedRowAmongRepeats(t *testing.T) {
	db, s := review38SQLite(t, &SQLOptions{OnError: func(error) {}})
	if _, err := db.Exec(`CREATE TRIGGER refuse BEFORE INSERT ON audit_log WHEN NEW.correlation_id = 'bad'
BEGIN SELECT RAISE(ABORT, 'refused by trigger'); END`); err != nil {
		t.Fatal(err)
	}
	same := review38Event("same", 0)
	review38Put(t, s, same)
	var b writerBatch
	for _, e := range []*Event{same, review38Event("bad", 1), same} {
		r, err := toRow(e, SQLite)
		if err != nil {
			t.Fatal(err)
		}
		b.rows = append(b.rows, r)
	}
	review36Within(t, "commitBatch", func() { s.commitBatch(&b, nil, false, true, nil) })
	got, err := s.Query(context.Background(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"same", "same", "same"}, review38IDs(got)); diff != "" {
		t.Errorf("Query after the batch same, bad, same (-want +got):\n%s", diff)
	}
	if got, want := s.Stats().Lost, uint64(1); got != want {
		t.Errorf("Stats().Lost = %d, want %d (the refused row)", got, want)
	}
}

// TestReview38ClosingRetriesFirstRow: while the sink closes, a batch that
// failed is inserted row by row, and its first row gets its three attempts
// like any other: here another connection holds the write lock (the
// sink's busy timeout is 0) until the first row's first attempt has
// failed, and both rows are then recorded. Giving the first row up at
// once, and the rest with it, would lose every queued event to a lock held
// for a moment at Close.
func TestReview38ClosingRetriesFirstRow(t *testing.T) {
	ctx := context.Background()
	db, dsn := review38NoWait(t)
	var lock *sql.Conn
	var errs []string
	s, err := NewSQL(ctx, db, SQLite, &SQLOptions{OnError: func(err error) {
		// Called by commitBatch, below, which the test waits for.
		errs = append(errs, err.Error())
		if lock != nil && strings.Contains(err.Error(), "sql event a ") {
			if _, err := lock.ExecContext(ctx, `ROLLBACK`); err != nil {
				t.Errorf("ROLLBACK: %v", err)
			}
			lock.Close()
			lock = nil
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { review36Within(t, "Close", func() { s.Close() }) })
	var b writerBatch
	for i, id := range []string{"a", "b"} {
		r, err := toRow(review38Event(id, i), SQLite)
		if err != nil {
			t.Fatal(err)
		}
		b.rows = append(b.rows, r)
	}
	lock = review38Lock(t, dsn)
	review36Within(t, "commitBatch", func() { s.commitBatch(&b, nil, true, true, nil) })
	if lock != nil {
		t.Fatalf("the first row never failed while the lock was held; errors: %q", errs)
	}
	got, err := s.Query(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, review38IDs(got)); diff != "" {
		t.Errorf("Query after the closing batch (-want +got):\n%s\nerrors: %q", diff, errs)
	}
	if got := s.Stats().Lost; got != 0 {
		t.Errorf("Stats().Lost = %d, want 0", got)
	}
}

// TestReview38ClosingLockedCountsEveryLoss: while the sink closes with the
// write lock held by another connection for good (the sink's busy timeout
// is 0), the rows of a failed batch are given up, the first after three
// attempts, the next after one, the rest without one, and every one of
// them is counted in Stats().Lost and in Close's error: an operator reads
// those to know how many records the trail is missing.
func TestReview38ClosingLockedCountsEveryLoss(t *testing.T) {
	ctx := context.Background()
	db, dsn := review38NoWait(t)
	s, err := NewSQL(ctx, db, SQLite, &SQLOptions{OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	lock := review38Lock(t, dsn)
	var b writerBatch
	for i, id := range []string{"a", "b", "c", "d"} {
		r, err := toRow(review38Event(id, i), SQLite)
		if err != nil {
			t.Fatal(err)
		}
		b.rows = append(b.rows, r)
	}
	review36Within(t, "commitBatch", func() { s.commitBatch(&b, nil, true, true, nil) })
	if _, err := lock.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if got, want := s.Stats(), (SQLStats{Lost: 4}); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
	var closeErr error
	review36Within(t, "Close", func() { closeErr = s.Close() })
	if closeErr == nil || !strings.Contains(closeErr.Error(), "closed with 4 events not recorded") {
		t.Errorf("Close = %v, want 4 events not recorded", closeErr)
	}
}
