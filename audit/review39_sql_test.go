//go:build linux

package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// review39Rows converts events to the rows of a batch of dialect d.
func review39Rows(t *testing.T, d Dialect, events ...*Event) []row {
	t.Helper()
	var rows []row
	for _, e := range events {
		r, err := toRow(e, d)
		if err != nil {
			t.Fatalf("toRow(%s): %v", e.CorrelationID, err)
		}
		rows = append(rows, r)
	}
	return rows
}

// TestReview39RefusedRowCostsItsRound: a transaction grown past one round
// (BatchSize 4 here) that the database refuses for one row is committed
// round by round, and only the round holding the refused row goes row by
// row, as commit's doc says: rows 0-3 in one transaction, 4, 6 and 7 each
// in their own, 8-9 in one; 9 rows, 5 transactions, 1 lost. Rounds cut
// elsewhere (rows 1-4, then 6-9) record the same rows but not in the
// transactions Stats().Batches reports to the operator.
func TestReview39RefusedRowCostsItsRound(t *testing.T) {
	db, s := review38SQLite(t, &SQLOptions{BatchSize: 4, OnError: func(error) {}})
	if _, err := db.Exec(`CREATE TRIGGER refuse BEFORE INSERT ON audit_log WHEN NEW.correlation_id = 'bad'
BEGIN SELECT RAISE(ABORT, 'refused by trigger'); END`); err != nil {
		t.Fatal(err)
	}
	var events []*Event
	var want []string
	for i := range 10 {
		id := fmt.Sprintf("r%d", i)
		if i == 5 {
			id = "bad"
		} else {
			want = append(want, id)
		}
		events = append(events, review38Event(id, i))
	}
	b := writerBatch{rows: review39Rows(t, SQLite, events...)}
	review36Within(t, "commitBatch", func() { s.commitBatch(&b, nil, false, true, nil) })
	got, err := s.Query(context.Background(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, review38IDs(got)); diff != "" {
		t.Errorf("Query after a batch of 10 with row 5 refused (-want +got):\n%s", diff)
	}
	if got, want := s.Stats(), (SQLStats{Rows: 9, Batches: 5, Lost: 1}); got != want {
		t.Errorf("Stats() = %+v, want %+v (rounds 0-3 and 8-9 whole, 4, 6, 7 alone)", got, want)
	}
}

// TestReview39ClosingRowGetsThreeAttempts: while the sink closes, a row of
// a failed batch is given up only after its third attempt: here another
// connection holds the write lock (the sink's busy timeout is 0) until the
// first row has failed twice, and both rows are then recorded. Giving a
// row up after two attempts would lose an event to a lock held a little
// longer at Close.
func TestReview39ClosingRowGetsThreeAttempts(t *testing.T) {
	ctx := context.Background()
	db, dsn := review38NoWait(t)
	var lock *sql.Conn
	locked := true
	var errs []string
	s, err := NewSQL(ctx, db, SQLite, &SQLOptions{OnError: func(err error) {
		// Called by commitBatch, below, which the test waits for.
		errs = append(errs, err.Error())
		if locked && strings.Count(strings.Join(errs, "\n"), "sql event a ") == 2 {
			if _, err := lock.ExecContext(ctx, `ROLLBACK`); err != nil {
				t.Errorf("ROLLBACK: %v", err)
			}
			locked = false
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { review36Within(t, "Close", func() { s.Close() }) })
	lock = review38Lock(t, dsn)
	b := writerBatch{rows: review39Rows(t, SQLite, review38Event("a", 0), review38Event("b", 1))}
	review36Within(t, "commitBatch", func() { s.commitBatch(&b, nil, true, true, nil) })
	if locked {
		t.Fatalf("the first row did not fail twice while the lock was held; errors: %q", errs)
	}
	got, err := s.Query(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, review38IDs(got)); diff != "" {
		t.Errorf("Query after the closing batch (-want +got):\n%s\nerrors: %q", diff, errs)
	}
	if got, want := s.Stats(), (SQLStats{Rows: 2, Batches: 2}); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}

// TestReview39RowsAfterAGivenUpRow: after the row-by-row insert of a failed
// batch gives a row up, the rows after it are still tried: after a row
// the database refused (refused_twice: two in a row, not closing), and,
// while the sink closes, after a row given up for an error of the moment
// (the database full for that one large row) that follows a committed
// row. Only the row given up is lost, and OnError is told of each. Taking
// one refusal, or one full-database row after a good one, for a database
// that keeps failing would drop the events after it unattempted.
func TestReview39RowsAfterAGivenUpRow(t *testing.T) {
	big := review38Event("big", 1)
	big.Detail = strings.Repeat("x", 1<<20) // 256 pages: past max_page_count
	for _, tc := range []struct {
		name    string
		dsn     string
		closing bool
		events  []*Event
		want    []string
		lost    []string // the rows OnError must report not recorded
	}{
		{
			name:   "refused_twice",
			dsn:    "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_txlock=immediate",
			events: []*Event{review38Event("a", 0), review38Event("bad1", 1), review38Event("bad2", 2), review38Event("c", 3)},
			want:   []string{"a", "c"},
			lost:   []string{"bad1", "bad2"},
		},
		{
			name:    "full_after_committed_row_closing",
			dsn:     "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=max_page_count(64)&_txlock=immediate",
			closing: true,
			events:  []*Event{review38Event("a", 0), big, review38Event("c", 2)},
			want:    []string{"a", "c"},
			lost:    []string{"big"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "audit.db")+tc.dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			var errs []string
			s, err := NewSQL(context.Background(), db, SQLite, &SQLOptions{OnError: func(err error) {
				// Called by commitBatch, below, which the test waits for.
				errs = append(errs, err.Error())
			}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { review36Within(t, "Close", func() { s.Close() }) })
			if _, err := db.Exec(`CREATE TRIGGER refuse BEFORE INSERT ON audit_log WHEN NEW.correlation_id LIKE 'bad%'
BEGIN SELECT RAISE(ABORT, 'refused by trigger'); END`); err != nil {
				t.Fatal(err)
			}
			b := writerBatch{rows: review39Rows(t, SQLite, tc.events...)}
			review36Within(t, "commitBatch", func() { s.commitBatch(&b, nil, tc.closing, true, nil) })
			got, err := s.Query(context.Background(), Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, review38IDs(got)); diff != "" {
				t.Errorf("Query after the batch (-want +got):\n%s\nOnError: %q", diff, errs)
			}
			if got, want := s.Stats().Lost, uint64(len(tc.lost)); got != want {
				t.Errorf("Stats().Lost = %d, want %d", got, want)
			}
			for _, id := range tc.lost {
				if !strings.Contains(strings.Join(errs, "\n"), "audit: sql event "+id+" not recorded") {
					t.Errorf("OnError was not told that %s is not recorded: %q", id, errs)
				}
			}
		})
	}
}

// TestReview39ClosingGivesUpAfterThreeAttempts: while the sink closes with
// the write lock held by another connection for good (the sink's busy
// timeout is 0), the rows of a failed batch are given up as commit's doc
// says: the first after three attempts (OnError hears of two failed
// attempts, then that it is not recorded), the next after one, the rest
// without one (each attempt that fails is reported). More attempts hold
// Close up, one busy timeout each, for as long as the database keeps
// failing, with every queued event; fewer lose an event to a lock held a
// moment longer.
func TestReview39ClosingGivesUpAfterThreeAttempts(t *testing.T) {
	ctx := context.Background()
	db, dsn := review38NoWait(t)
	var errs []string
	s, err := NewSQL(ctx, db, SQLite, &SQLOptions{OnError: func(err error) {
		// Called by commitBatch, below, which the test waits for.
		errs = append(errs, err.Error())
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { review36Within(t, "Close", func() { s.Close() }) })
	lock := review38Lock(t, dsn)
	b := writerBatch{rows: review39Rows(t, SQLite, review38Event("a", 0), review38Event("b", 1), review38Event("c", 2), review38Event("d", 3))}
	review36Within(t, "commitBatch", func() { s.commitBatch(&b, nil, true, true, nil) })
	if _, err := lock.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, e := range errs {
		id, rest, ok := strings.Cut(strings.TrimPrefix(e, "audit: sql event "), " ")
		if !ok || !strings.HasPrefix(e, "audit: sql event ") {
			continue
		}
		if strings.HasPrefix(rest, "(attempt ") {
			rest = rest[:strings.Index(rest, ")")+1]
		} else {
			rest, _, _ = strings.Cut(rest, ":")
		}
		got[id] = append(got[id], rest)
	}
	want := map[string][]string{"a": {"(attempt 1)", "(attempt 2)", "not recorded"}, "b": {"not recorded"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OnError per row (-want +got):\n%s\nall: %q", diff, errs)
	}
	if got, want := s.Stats(), (SQLStats{Lost: 4}); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}

// TestReview39WriteTimeBounds: Write refuses, with ErrInvalidEvent, an
// event whose instant (in UTC, whatever its location) is outside years
// 1678 to 2261, as its doc says, and records every instant inside them
// exactly. Unix nanoseconds wrap past 2262-04-11: a refused event is the
// caller's to handle, where a wrapped one would be stored centuries off,
// out of reach of any query for its time.
func TestReview39WriteTimeBounds(t *testing.T) {
	ctx := context.Background()
	_, s := review38SQLite(t, nil)
	plus1 := time.FixedZone("+01:00", 3600)
	for _, tc := range []struct {
		name string
		at   time.Time
		ok   bool
	}{
		{name: "last_ns_of_1677", at: time.Date(1677, 12, 31, 23, 59, 59, 999_999_999, time.UTC)},
		{name: "first_ns_of_1678", at: time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC), ok: true},
		{name: "1678_local_1677_utc", at: time.Date(1678, 1, 1, 0, 30, 0, 0, plus1)},
		{name: "last_ns_of_2261", at: time.Date(2261, 12, 31, 23, 59, 59, 999_999_999, time.UTC), ok: true},
		{name: "2262_local_2261_utc", at: time.Date(2262, 1, 1, 0, 30, 0, 0, plus1), ok: true},
		{name: "first_ns_of_2262", at: time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)},
		{name: "2262_before_int64_wraps", at: time.Date(2262, 4, 1, 0, 0, 0, 0, time.UTC)},
		{name: "year_1", at: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{name: "year_9999", at: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := review38Event(tc.name, 0)
			e.Time = tc.at
			err := s.Write(ctx, e)
			if !tc.ok {
				if !errors.Is(err, ErrInvalidEvent) {
					t.Errorf("Write(event at %v) = %v, want ErrInvalidEvent", tc.at, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Write(event at %v) = %v, want nil", tc.at, err)
			}
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := s.Query(ctx, Filter{CorrelationID: tc.name})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || !got[0].Time.Equal(tc.at) {
				t.Errorf("Query(%s) = %+v, want one event at %v", tc.name, got, tc.at)
			}
		})
	}
	got, err := s.Query(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"first_ns_of_1678", "2262_local_2261_utc", "last_ns_of_2261"}, review38IDs(got)); diff != "" {
		t.Errorf("Query after the writes (-want +got):\n%s", diff)
	}
}

// TestReview39CommittedLooksForFirstAndLast: committed, which settles a
// batch whose COMMIT failed without saying whether it happened, takes the
// batch for committed only when both its first and its last rows are in
// the table, and says so when it cannot look. Taking a batch for committed
// when one of them is missing drops its rows unrecorded and uncounted;
// "not there" for a failed look-up inserts a committed batch again.
func TestReview39CommittedLooksForFirstAndLast(t *testing.T) {
	db, s := review38SQLite(t, nil)
	review38Put(t, s, review38Event("first", 0), review38Event("last", 9))
	first, mid, last := review38Event("first", 0), review38Event("mid", 5), review38Event("last", 9)
	for _, tc := range []struct {
		name   string
		events []*Event
		want   bool
	}{
		{name: "first_and_last_there", events: []*Event{first, mid, last}, want: true},
		{name: "first_missing", events: []*Event{mid, last}},
		{name: "last_missing", events: []*Event{first, mid}},
		{name: "neither_there", events: []*Event{mid, review38Event("mid2", 6)}},
		{name: "one_row_there", events: []*Event{last}, want: true},
		{name: "one_row_missing", events: []*Event{mid}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := review39Rows(t, SQLite, tc.events...)
			got, err := s.committed(rows, pgXact{})
			if err != nil || got != tc.want {
				t.Errorf("committed(%s) = %v, %v; want %v, nil", tc.name, got, err, tc.want)
			}
		})
	}
	t.Run("database_closed", func(t *testing.T) {
		db.Close()
		rows := review39Rows(t, SQLite, first, mid, last)
		if got, err := s.committed(rows, pgXact{}); err == nil {
			t.Errorf("committed on a closed database = %v, nil; want an error", got)
		}
	})
}

// TestReview39ArgsAndTimeColumns: on SQLite the column time holds the
// event's UTC time in milliseconds as text, as SQLite's own strftime of
// time_ns computes it (the generated column of schema version 1, which
// queries and reports written against that version read), also for an
// instant before 1970 and in another zone; and an event without
// arguments (nil or empty) has NULL in the column args, as the JSONL sink
// leaves "args" out, not the text "null" that reads as recorded
// arguments.
func TestReview39ArgsAndTimeColumns(t *testing.T) {
	db, s := review38SQLite(t, nil)
	for _, tc := range []struct {
		name     string
		at       time.Time
		args     map[string]any
		wantTime string
		wantArgs sql.NullString
	}{
		{name: "nil_args", at: time.Date(2026, 1, 2, 3, 4, 5, 678_901_234, time.UTC), wantTime: "2026-01-02T03:04:05.678Z"},
		{name: "empty_args", at: time.Date(2026, 1, 2, 3, 4, 5, 999_999_999, time.FixedZone("", -5*3600)), args: map[string]any{}, wantTime: "2026-01-02T08:04:05.999Z"},
		{name: "with_args", at: time.Date(1969, 12, 31, 23, 59, 59, 500_000_000, time.UTC), args: map[string]any{"amount": 5}, wantTime: "1969-12-31T23:59:59.500Z", wantArgs: sql.NullString{String: `{"amount":5}`, Valid: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := review38Event(tc.name, 0)
			e.Time, e.Args = tc.at, tc.args
			review38Put(t, s, e)
			var gotTime, sqliteTime string
			var gotArgs sql.NullString
			if err := db.QueryRow(`SELECT time, strftime('%Y-%m-%dT%H:%M:%fZ', time_ns / 1000000 / 1000.0, 'unixepoch'), args FROM audit_log WHERE correlation_id = ?`, tc.name).Scan(&gotTime, &sqliteTime, &gotArgs); err != nil {
				t.Fatal(err)
			}
			if gotTime != tc.wantTime || sqliteTime != tc.wantTime {
				t.Errorf("column time = %q, SQLite's strftime of time_ns = %q; want %q", gotTime, sqliteTime, tc.wantTime)
			}
			if gotArgs != tc.wantArgs {
				t.Errorf("column args = %+v, want %+v", gotArgs, tc.wantArgs)
			}
		})
	}
}

// TestReview39ArgsNestingAsJSONL: the SQL sink takes arguments nested as
// deep as the JSONL encoding takes them, and refuses (ErrInvalidEvent) one
// level more, as the JSONL sink does: an event a deployment's JSONL trail
// records must not be refused by its SQL trail, nor the other way round.
func TestReview39ArgsNestingAsJSONL(t *testing.T) {
	nested := func(n int) map[string]any {
		m := map[string]any{"leaf": true}
		for range n {
			m = map[string]any{"a": m}
		}
		return m
	}
	deepest := -1
	for n := 990; n < 1010; n++ {
		e := review38Event("probe", 0)
		e.Args = nested(n)
		if _, err := e.AppendJSON(nil); err != nil {
			break
		}
		deepest = n
	}
	if deepest < 990 || deepest == 1009 {
		t.Fatalf("AppendJSON takes args nested %d deep, want a limit between 990 and 1008", deepest)
	}
	_, s := review38SQLite(t, nil)
	ctx := context.Background()
	ok := review38Event("deepest", 0)
	ok.Args = nested(deepest)
	if err := s.Write(ctx, ok); err != nil {
		t.Errorf("Write(args nested %d deep, as AppendJSON takes) = %v, want nil", deepest, err)
	}
	deeper := review38Event("deeper", 1)
	deeper.Args = nested(deepest + 1)
	if err := s.Write(ctx, deeper); !errors.Is(err, ErrInvalidEvent) {
		t.Errorf("Write(args nested %d deep, as AppendJSON refuses) = %v, want ErrInvalidEvent", deepest+1, err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.Query(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"deepest"}, review38IDs(got)); diff != "" {
		t.Errorf("Query (-want +got):\n%s", diff)
	}
}

// TestReview39WriteRefusesNonFiniteNumbers: Write refuses, with
// ErrInvalidEvent, an event whose latency or cost is NaN or infinite of
// either sign, as its doc says: a record whose numbers do not read back as
// numbers (JSON has no NaN or infinity) is no record a report can use, and
// an infinite cost must not pass for a cost recorded.
func TestReview39WriteRefusesNonFiniteNumbers(t *testing.T) {
	_, s := review38SQLite(t, nil)
	for _, tc := range []struct {
		name          string
		latency, cost float64
	}{
		{name: "latency_nan", latency: math.NaN()},
		{name: "latency_plus_inf", latency: math.Inf(1)},
		{name: "latency_minus_inf", latency: math.Inf(-1)},
		{name: "cost_nan", cost: math.NaN()},
		{name: "cost_plus_inf", cost: math.Inf(1)},
		{name: "cost_minus_inf", cost: math.Inf(-1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := review38Event(tc.name, 0)
			e.LatencyMS, e.Cost = tc.latency, tc.cost
			if err := s.Write(context.Background(), e); !errors.Is(err, ErrInvalidEvent) {
				t.Errorf("Write(latency %v, cost %v) = %v, want ErrInvalidEvent", tc.latency, tc.cost, err)
			}
		})
	}
}

// TestReview39PostgresBatchInOneTransaction: on PostgreSQL a healthy batch
// of 7 rows (INSERTs of 4, 2 and 1 rows) commits at the first attempt, in
// one transaction, with no error reported: the multi-row INSERT is one
// PostgreSQL takes. A statement it refused would make every batch fail
// three times and then go row by row: each event still recorded, but an
// OnError alert per batch and a transaction per row.
func TestReview39PostgresBatchInOneTransaction(t *testing.T) {
	ctx := context.Background()
	db := review38Postgres(t)
	var errs []string
	s, err := NewSQL(ctx, db, Postgres, &SQLOptions{OnError: func(err error) {
		// Called by commitBatch, below, which the test waits for.
		errs = append(errs, err.Error())
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { review36Within(t, "Close", func() { s.Close() }) })
	var events []*Event
	var want []string
	for i := range 7 {
		id := fmt.Sprintf("e%d", i)
		events = append(events, review38Event(id, i))
		want = append(want, id)
	}
	b := writerBatch{rows: review39Rows(t, Postgres, events...)}
	review36Within(t, "commitBatch", func() { s.commitBatch(&b, nil, false, true, nil) })
	got, err := s.Query(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, review38IDs(got)); diff != "" {
		t.Errorf("Query after the batch (-want +got):\n%s", diff)
	}
	var xacts int
	if err := db.QueryRow(`SELECT count(DISTINCT xmin::text) FROM audit_log`).Scan(&xacts); err != nil {
		t.Fatal(err)
	}
	if got, want := s.Stats(), (SQLStats{Rows: 7, Batches: 1}); got != want || xacts != 1 || len(errs) > 0 {
		t.Errorf("Stats() = %+v, %d transactions hold the rows, OnError: %q; want %+v, 1, none", got, xacts, errs, want)
	}
}
