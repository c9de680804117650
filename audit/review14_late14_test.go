package audit_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
)

// late14Event returns an event whose every field holds a value of its own,
// so that a value bound to the wrong column shows.
func late14Event(i int) audit.Event {
	s := func(f string) string { return fmt.Sprintf("%s-%d", f, i) }
	return audit.Event{
		Time:          time.Date(2026, 7, 28, 10, 0, i, 123456789, time.UTC),
		CorrelationID: s("corr"), RequestID: s("req"), SessionID: s("sess"), Subject: s("subj"),
		Roles: []string{s("role")}, Tool: s("tool"), Class: s("class"), Phase: audit.PhaseIntent,
		Allowed: true, DryRun: false, Code: s("code"), Detail: s("detail"), LatencyMS: 1.25 + float64(i),
		ArgsSHA256: s("hash"), Cost: 7.5 + float64(i), ProtocolVersion: s("proto"), ClientName: s("client"),
		Args: map[string]any{"k": s("arg")},
	}
}

// late14Columns returns audit_log's columns of e's row by name, each as
// fmt.Sprint prints it.
func late14Columns(t *testing.T, db *sql.DB, corr string) map[string]string {
	t.Helper()
	names := []string{"time_ns", "correlation_id", "request_id", "session_id", "subject", "roles", "tool",
		"class", "phase", "allowed", "dry_run", "code", "detail", "latency_ms", "args_sha256", "cost",
		"protocol_version", "client_name", "args", "time"}
	vals := make([]any, len(names))
	ptrs := make([]any, len(names))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := db.QueryRow(`SELECT ` + strings.Join(names, ", ") + ` FROM audit_log WHERE correlation_id = '` + corr + `'`).Scan(ptrs...); err != nil {
		t.Fatalf("row %s: %v", corr, err)
	}
	out := make(map[string]string, len(names))
	for i, n := range names {
		if b, ok := vals[i].([]byte); ok {
			vals[i] = string(b)
		}
		out[n] = fmt.Sprint(vals[i])
	}
	return out
}

// TestLate14EveryColumnByName: each field lands in its own column, read
// by the column's name (a Query reads the columns in the order the INSERT
// writes them, so it cannot see two values swapped), through the native
// SQLite writer and through database/sql, one row and several per INSERT.
func TestLate14EveryColumnByName(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) *sql.DB
	}{
		{"native", func(t *testing.T) *sql.DB { return openSQLite(t) }},
		{"database_sql", openWrappedSQLite},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := tc.open(t)
			s := newSQLiteSink(t, db, nil)
			one := late14Event(0)
			if err := s.WriteDurable(ctx, &one); err != nil {
				t.Fatal(err)
			}
			batch := []audit.Event{late14Event(1), late14Event(2), late14Event(3)}
			writeUnderLock(t, db, s, batch)
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if native := !audit.UsesDatabaseSQL(s); native != (tc.name == "native") {
				t.Errorf("native writer used: %v", native)
			}
			for i := range 4 {
				e := late14Event(i)
				want := map[string]string{
					"time_ns": fmt.Sprint(e.Time.UnixNano()), "correlation_id": e.CorrelationID,
					"request_id": e.RequestID, "session_id": e.SessionID, "subject": e.Subject,
					"roles": `["` + e.Roles[0] + `"]`, "tool": e.Tool, "class": e.Class, "phase": "intent",
					"allowed": "1", "dry_run": "0", "code": e.Code, "detail": e.Detail,
					"latency_ms": fmt.Sprint(e.LatencyMS), "args_sha256": e.ArgsSHA256, "cost": fmt.Sprint(e.Cost),
					"protocol_version": e.ProtocolVersion, "client_name": e.ClientName,
					"args": `{"k":"arg-` + fmt.Sprint(i) + `"}`, "time": e.Time.Format("2006-01-02T15:04:05.000Z"),
				}
				if diff := cmp.Diff(want, late14Columns(t, db, e.CorrelationID)); diff != "" {
					t.Errorf("row %s by column (-want +got):\n%s", e.CorrelationID, diff)
				}
			}
		})
	}
}

// late14SchemaV3SQLite makes db an SQLite audit_log of schema version 3,
// as that version of this package left it (created at version 1, then
// upgraded), and inserts n rows every column of which is set.
func late14SchemaV3SQLite(t *testing.T, db *sql.DB, n int) []audit.Event {
	t.Helper()
	qs := schemaV1SQLite()
	qs = append(qs,
		`ALTER TABLE audit_log DROP COLUMN time`,
		`ALTER TABLE audit_log ADD COLUMN time TEXT NOT NULL DEFAULT ''`,
		`INSERT INTO audit_schema_version (version) VALUES (3)`)
	for _, q := range qs {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var old []audit.Event
	for i := range n {
		e := late14Event(100 + i)
		e.RequestID = "" // no such column yet
		if _, err := db.Exec(`INSERT INTO audit_log (time_ns, correlation_id, session_id, subject, roles, tool, class, phase, allowed, dry_run, code, detail, latency_ms, args_sha256, cost, protocol_version, client_name, args, time)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', ? / 1000000 / 1000.0, 'unixepoch'))`,
			e.Time.UnixNano(), e.CorrelationID, e.SessionID, e.Subject, `["`+e.Roles[0]+`"]`, e.Tool, e.Class,
			string(e.Phase), e.Allowed, e.DryRun, e.Code, e.Detail, e.LatencyMS, e.ArgsSHA256, e.Cost,
			e.ProtocolVersion, e.ClientName, `{"k":"arg-`+fmt.Sprint(100+i)+`"}`, e.Time.UnixNano()); err != nil {
			t.Fatal(err)
		}
		old = append(old, e)
	}
	return old
}

// TestLate14SQLiteUpgradeV3: a version 3 file is upgraded to 4 by several
// openers at once (each DSN): every row is kept, with request_id "" and
// every other field as it was, and the new rows carry theirs.
func TestLate14SQLiteUpgradeV3(t *testing.T) {
	for _, plain := range []bool{false, true} {
		t.Run(fmt.Sprintf("plain_dsn_%v", plain), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.db")
			open := func() *sql.DB {
				dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)"
				db, err := sql.Open("sqlite", dsn)
				if !plain {
					db, err = audit.OpenSQLite(path)
				}
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				return db
			}
			want := late14SchemaV3SQLite(t, open(), 50)
			const n = 4
			var dbs [n]*sql.DB
			for i := range dbs {
				dbs[i] = open()
			}
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					s, err := audit.NewSQL(context.Background(), dbs[i], audit.SQLite, &audit.SQLOptions{OnError: func(error) {}})
					if err != nil {
						t.Errorf("NewSQL %d: %v", i, err)
						return
					}
					defer s.Close()
					e := late14Event(i)
					if err := s.WriteDurable(context.Background(), &e); err != nil {
						t.Errorf("WriteDurable %d: %v", i, err)
					}
				})
			}
			wg.Wait()
			for i := range n {
				want = append(want, late14Event(i))
			}
			got, err := audit.QuerySQL(context.Background(), dbs[0], audit.SQLite, audit.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			byCorr := func(a, b audit.Event) int { return strings.Compare(a.CorrelationID, b.CorrelationID) }
			slices.SortFunc(got, byCorr)
			slices.SortFunc(want, byCorr)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("rows after the upgrade (-want +got):\n%s", diff)
			}
			var rows, v int
			if err := dbs[0].QueryRow(`SELECT COUNT(*), MAX(version) FROM audit_schema_version`).Scan(&rows, &v); err != nil {
				t.Fatal(err)
			}
			if rows != 3 || v != audit.SchemaVersion {
				t.Errorf("audit_schema_version: %d rows, max %d; want 3 rows (1, 3, then %d), max %d", rows, v, audit.SchemaVersion, audit.SchemaVersion)
			}
		})
	}
}

// TestLate14NewerSchemaRefused: a database a later version of this package
// upgraded is refused, with an error that says so, rather than written to
// with columns it would not fill.
func TestLate14NewerSchemaRefused(t *testing.T) {
	db := openSQLite(t)
	newSQLiteSink(t, db, nil).Close()
	if _, err := db.Exec(`INSERT INTO audit_schema_version (version) VALUES (?)`, audit.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	_, err := audit.NewSQL(context.Background(), db, audit.SQLite, nil)
	if want := fmt.Sprintf("schema version %d is newer than this library's %d", audit.SchemaVersion+1, audit.SchemaVersion); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("NewSQL on a newer schema: %v, want an error saying %q", err, want)
	}
}

// TestLate14RequestIDOddBytes: a request_id with NUL or invalid UTF-8 (a
// custom Event can hold one; the guard records only what its header check
// passed) is recorded as U+FFFD by the JSONL and SQL sinks alike, and the
// slog sink writes the attribute too.
func TestLate14RequestIDOddBytes(t *testing.T) {
	ctx := context.Background()
	e := late14Event(7)
	e.RequestID = "a\x00b\xffc"
	const want = "a\uFFFDb\uFFFDc"

	s := newSQLiteSink(t, openSQLite(t), nil)
	if err := s.WriteDurable(ctx, &e); err != nil {
		t.Fatal(err)
	}
	got, err := s.Query(ctx, audit.Filter{CorrelationID: e.CorrelationID})
	if err != nil || len(got) != 1 || got[0].RequestID != want {
		t.Errorf("SQL: %+v, %v; want request_id %q", got, err, want)
	}

	path := filepath.Join(t.TempDir(), "a.jsonl")
	j, err := audit.OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Write(ctx, &e); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	jl, err := audit.QueryJSONL(path, audit.Filter{})
	if err != nil || len(jl) != 1 || jl[0].RequestID != want {
		t.Errorf("JSONL: %+v, %v; want request_id %q", jl, err, want)
	}

	var buf bytes.Buffer
	if err := audit.NewSlogSink(slog.NewJSONHandler(&buf, nil), nil).Write(ctx, &e); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"request_id":"a`) {
		t.Errorf("slog: %s, want a request_id attribute", buf.String())
	}
}

// TestLate14QuerySQLReadsVersion3: QuerySQL reads the audit_log of a
// database no sink of this version has upgraded yet (a reporting tool,
// often with a read-only role that could not upgrade it, updated before
// the servers that write): its rows, with request_id "", as before version
// 4; it does not upgrade the database.
func TestLate14QuerySQLReadsVersion3(t *testing.T) {
	db := openSQLite(t)
	want := late14SchemaV3SQLite(t, db, 3)
	got, err := audit.QuerySQL(context.Background(), db, audit.SQLite, audit.Filter{Subject: want[1].Subject})
	if err != nil {
		t.Fatalf("QuerySQL on a version 3 database: %v", err)
	}
	if diff := cmp.Diff(want[1:2], got); diff != "" {
		t.Errorf("QuerySQL on a version 3 database (-want +got):\n%s", diff)
	}
	// A version 3 table has no request ids: a query by one finds nothing,
	// and is no error.
	if got, err := audit.QuerySQL(context.Background(), db, audit.SQLite, audit.Filter{RequestID: "gw-1"}); err != nil || len(got) != 0 {
		t.Errorf("QuerySQL by request id on a version 3 database: %d events, %v; want none, nil", len(got), err)
	}
	var v int
	if err := db.QueryRow(`SELECT MAX(version) FROM audit_schema_version`).Scan(&v); err != nil || v != 3 {
		t.Errorf("schema version after QuerySQL: %d, %v; want 3, untouched", v, err)
	}
}
