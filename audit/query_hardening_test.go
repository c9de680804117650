package audit_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
)

// queryEvent is a valid event with correlation id id.
func queryEvent(id string) *audit.Event {
	return &audit.Event{
		Time: time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC), CorrelationID: id, SessionID: "s-" + id,
		Subject: "alice", Tool: "search_docs", Class: "read", Phase: audit.PhaseOutcome, Allowed: true,
		LatencyMS: 0.5,
	}
}

// TestSQLQueryArgsNumberBeyondFloat64: an opted-in argument holding a number beyond
// float64 (a client can send 1e400) is read back, and does not make every
// query that includes its row fail.
func TestSQLQueryArgsNumberBeyondFloat64(t *testing.T) {
	ctx := context.Background()
	s := newSQLiteSink(t, openSQLite(t), nil)
	other := queryEvent("other-session")
	if err := s.WriteDurable(ctx, other); err != nil {
		t.Fatal(err)
	}
	e := queryEvent("huge")
	e.Args = map[string]any{"amount": json.Number("1e400")}
	if err := s.WriteDurable(ctx, e); err != nil {
		t.Fatalf("WriteDurable: %v", err)
	}
	got, err := s.Query(ctx, audit.Filter{})
	if err != nil {
		t.Fatalf("Query(all) after one event with args {\"amount\":1e400}: %v", err)
	}
	if len(got) != 2 {
		t.Fatalf("Query(all) = %d events, want 2", len(got))
	}

	// The JSONL sink reads the same event back.
	path := jsonlHolding(t, e)
	if evs, err := audit.QueryJSONL(path, audit.Filter{}); err != nil || len(evs) != 1 {
		t.Errorf("QueryJSONL = %d events, %v", len(evs), err)
	}
}

// TestSQLFilterFindsWhatWasWritten: the SQL sink stores NUL and invalid UTF-8 as
// U+FFFD; a filter holding the value as written finds the event.
func TestSQLFilterFindsWhatWasWritten(t *testing.T) {
	ctx := context.Background()
	s := newSQLiteSink(t, openSQLite(t), nil)
	e := queryEvent("nul-tool")
	e.Tool = "delete\x00_all"
	if err := s.WriteDurable(ctx, e); err != nil {
		t.Fatal(err)
	}
	got, err := s.Query(ctx, audit.Filter{Tool: e.Tool})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Errorf("SQL Query(Filter{Tool: %q}) = %d events, want 1 (the event written with that tool)", e.Tool, len(got))
	}

	path := jsonlHolding(t, e)
	if evs, err := audit.QueryJSONL(path, audit.Filter{Tool: e.Tool}); err != nil || len(evs) != 1 {
		t.Errorf("QueryJSONL(Filter{Tool: %q}) = %d events, %v; want 1", e.Tool, len(evs), err)
	}
}

// TestOpenSQLiteAwkwardPaths: OpenSQLite opens the file it is given, pragmas
// included, whatever the path holds: ?, #, %, spaces, unicode.
func TestOpenSQLiteAwkwardPaths(t *testing.T) {
	for _, tc := range []struct{ name, file string }{
		{"plain", "audit.db"},
		{"space", "my audit.db"},
		{"unicode", "jour\u00e9nal-日本.db"},
		{"question_mark", "what?.db"},
		{"hash", "audit#1.db"},
		{"percent", "100%41.db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tc.file)
			db, err := audit.OpenSQLite(path)
			if err != nil {
				t.Fatalf("OpenSQLite(%q): %v", path, err)
			}
			defer db.Close()
			var mode string
			if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
				t.Fatal(err)
			}
			if mode != "wal" {
				t.Errorf("journal_mode = %q, want wal", mode)
			}
			s, err := audit.NewSQL(context.Background(), db, audit.SQLite, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.WriteDurable(context.Background(), queryEvent("c")); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if _, err := os.Stat(path); err != nil {
				ents, _ := os.ReadDir(dir)
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("database file %q not created (%v); the directory holds %q", tc.file, err, names)
			}
		})
	}
}

// TestJSONLRecordLongerThanMaxLineSize: the JSONL sink refuses a record longer than
// MaxLineSize instead of acknowledging one ReadJSONL would refuse.
func TestJSONLRecordLongerThanMaxLineSize(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.jsonl")
	j, err := audit.OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := queryEvent("long")
	e.Args = map[string]any{"body": strings.Repeat("x", audit.MaxLineSize)}
	werr := j.WriteDurable(ctx, e)
	j.Close()
	evs, qerr := audit.QueryJSONL(path, audit.Filter{})
	if werr == nil && len(evs) != 1 {
		t.Errorf("WriteDurable accepted a %d-byte record, QueryJSONL then returns %d events, %v", audit.MaxLineSize+200, len(evs), qerr)
	}
}

// TestAppendJSONOffsetWithSeconds: a time whose zone offset has seconds (a
// historical local mean time) is encoded as the same instant.
func TestAppendJSONOffsetWithSeconds(t *testing.T) {
	e := queryEvent("lmt")
	e.Time = time.Date(2026, 7, 28, 10, 0, 0, 0, time.FixedZone("LMT", 3600+30))
	b, err := e.AppendJSON(nil)
	if err != nil {
		return // refusing is fine
	}
	var got audit.Event
	for ev, err := range audit.ReadJSONL(bytes.NewReader(append(b, '\n'))) {
		if err != nil {
			t.Fatal(err)
		}
		got = ev
	}
	if !got.Time.Equal(e.Time) {
		t.Errorf("time %v encoded as %s reads back as %v (%v off)", e.Time, b[:40], got.Time, got.Time.Sub(e.Time))
	}
}

// TestSQLiteConcurrentOpeners: several processes (here *sql.DB handles)
// opening one database at once each get a working sink, whatever DSN they
// used, and the migration keeps every row.
func TestSQLiteConcurrentOpeners(t *testing.T) {
	for _, tc := range []struct {
		name  string
		v1    bool
		plain bool
	}{
		{"new_file", false, false},
		{"version_1", true, false},
		{"new_file_plain_dsn", false, true},
		{"version_1_plain_dsn", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.db")
			open := func() *sql.DB {
				if tc.plain {
					db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)")
					if err != nil {
						t.Fatal(err)
					}
					return db
				}
				db, err := audit.OpenSQLite(path)
				if err != nil {
					t.Fatal(err)
				}
				return db
			}
			if tc.v1 {
				db := open()
				for _, q := range schemaV1SQLite() {
					if _, err := db.Exec(q); err != nil {
						t.Fatal(err)
					}
				}
				for i := range 100 {
					if _, err := db.Exec(`INSERT INTO audit_log (time_ns, correlation_id, phase, allowed, dry_run, latency_ms) VALUES (?, ?, 'outcome', 1, 0, 0.5)`,
						int64(i)*1e9, fmt.Sprint("old", i)); err != nil {
						t.Fatal(err)
					}
				}
				db.Close()
			}
			const n = 4
			var dbs [n]*sql.DB
			for i := range dbs {
				dbs[i] = open()
				defer dbs[i].Close()
			}
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					s, err := audit.NewSQL(context.Background(), dbs[i], audit.SQLite, &audit.SQLOptions{OnError: func(error) {}})
					if err != nil {
						t.Errorf("NewSQL %d: %v", i, err)
						return
					}
					if err := s.WriteDurable(context.Background(), queryEvent(fmt.Sprint("new", i))); err != nil {
						t.Errorf("WriteDurable %d: %v", i, err)
					}
					s.Close()
				})
			}
			wg.Wait()
			var rows, v, total int
			if err := dbs[0].QueryRow(`SELECT COUNT(*), MAX(version) FROM audit_schema_version`).Scan(&rows, &v); err != nil {
				t.Fatal(err)
			}
			if rows != 1+b2i(tc.v1) || v != audit.SchemaVersion {
				t.Errorf("audit_schema_version: %d rows, max %d", rows, v)
			}
			if err := dbs[0].QueryRow(`SELECT COUNT(*) FROM audit_log`).Scan(&total); err != nil {
				t.Fatal(err)
			}
			if want := n + 100*b2i(tc.v1); total != want {
				t.Errorf("audit_log holds %d rows, want %d", total, want)
			}
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestSQLRoundTripOddFields: fields a pipeline can produce read back exactly.
func TestSQLRoundTripOddFields(t *testing.T) {
	ctx := context.Background()
	s := newSQLiteSink(t, openSQLite(t), nil)
	path := filepath.Join(t.TempDir(), "a.jsonl")
	j, err := audit.OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	evs := []*audit.Event{}
	add := func(id string, f func(e *audit.Event)) {
		e := queryEvent(id)
		f(e)
		evs = append(evs, e)
	}
	add("empty_role", func(e *audit.Event) { e.Roles = []string{"", "a"} })
	add("nested_empty", func(e *audit.Event) {
		e.Args = map[string]any{"m": map[string]any{}, "a": []any{}, "n": nil, "b": false, "s": ""}
	})
	add("before_1970", func(e *audit.Event) { e.Time = time.Date(1690, 1, 1, 0, 0, 0, 1, time.UTC) })
	add("end_2261", func(e *audit.Event) { e.Time = time.Date(2261, 12, 31, 23, 59, 59, 999999999, time.UTC) })
	add("tiny_cost", func(e *audit.Event) { e.Cost = 5e-324 })
	add("huge_cost", func(e *audit.Event) { e.Cost = math.MaxFloat64 })
	add("unicode", func(e *audit.Event) { e.Subject = "日本\u2028\U0001F600"; e.Detail = strings.Repeat("é", 100000) })
	for _, e := range evs {
		if err := s.Write(ctx, e); err != nil {
			t.Fatalf("%s: %v", e.CorrelationID, err)
		}
		if err := j.Write(ctx, e); err != nil {
			t.Fatalf("%s: %v", e.CorrelationID, err)
		}
	}
	j.Close()
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		got, err := s.Query(ctx, audit.Filter{CorrelationID: e.CorrelationID})
		if err != nil || len(got) != 1 {
			t.Errorf("%s: Query = %d, %v", e.CorrelationID, len(got), err)
			continue
		}
		jl, err := audit.QueryJSONL(path, audit.Filter{CorrelationID: e.CorrelationID})
		if err != nil || len(jl) != 1 {
			t.Errorf("%s: QueryJSONL = %d, %v", e.CorrelationID, len(jl), err)
			continue
		}
		if diff := cmp.Diff(*e, got[0]); diff != "" {
			t.Errorf("%s: SQL round trip (-want +got):\n%s", e.CorrelationID, diff)
		}
		if diff := cmp.Diff(*e, jl[0]); diff != "" {
			t.Errorf("%s: JSONL round trip (-want +got):\n%s", e.CorrelationID, diff)
		}
	}
}

// TestSlogSinkRefusesUnencodableEvent: the slog sink refuses what the other sinks
// refuse, instead of letting the handler print "!ERROR" values.
func TestSlogSinkRefusesUnencodableEvent(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(e *audit.Event)
	}{
		{"year_10000", func(e *audit.Event) { e.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"nan_latency", func(e *audit.Event) { e.LatencyMS = math.NaN() }},
		{"inf_arg", func(e *audit.Event) { e.Args = map[string]any{"x": math.Inf(1)} }},
		{"no_correlation_id", func(e *audit.Event) { e.CorrelationID = "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			s := audit.NewSlogSink(slog.NewJSONHandler(&buf, nil), nil)
			e := queryEvent("c")
			tc.mod(e)
			_, encErr := e.AppendJSON(nil)
			jsonlErr := func() error {
				j, err := audit.OpenJSONL(filepath.Join(t.TempDir(), "a.jsonl"), nil)
				if err != nil {
					t.Fatal(err)
				}
				defer j.Close()
				return j.Write(context.Background(), e)
			}()
			err := s.Write(context.Background(), e)
			if err == nil {
				t.Errorf("SlogSink.Write = nil (AppendJSON: %v, JSONL sink: %v); slog wrote %s", encErr, jsonlErr, bytes.TrimSpace(buf.Bytes()))
			}
		})
	}
}

// jsonlHolding writes e durably to a new JSONL file and returns its path.
func jsonlHolding(t *testing.T, e *audit.Event) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "a.jsonl")
	j, err := audit.OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.WriteDurable(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
