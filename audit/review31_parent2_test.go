package audit

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReview31Parent2QueryOlderVersions: QuerySQL reads a SQLite table of
// every earlier schema version as it is, changing nothing: its rows read
// back without a parent, a Filter.ParentID matches none of them (alone, or
// with a session, request id or page), and the other filters still work.
func TestReview31Parent2QueryOlderVersions(t *testing.T) {
	ctx := context.Background()
	for from := 1; from < SchemaVersion; from++ {
		t.Run(fmt.Sprintf("v%d", from), func(t *testing.T) {
			db, err := OpenSQLite(filepath.Join(t.TempDir(), "audit.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`CREATE TABLE audit_schema_version (version INTEGER NOT NULL)`); err != nil {
				t.Fatal(err)
			}
			for to := 1; to <= from; to++ {
				for _, q := range migration(to, SQLite) {
					if _, err := db.Exec(q); err != nil {
						t.Fatalf("version %d: %s: %v", to, q, err)
					}
				}
				if _, err := db.Exec(`INSERT INTO audit_schema_version (version) VALUES (?)`, to); err != nil {
					t.Fatal(err)
				}
			}
			ins := `INSERT INTO audit_log (time_ns, correlation_id, session_id, phase, allowed, dry_run, latency_ms) VALUES (?, ?, 's', 'outcome', 1, 0, 0.5)`
			if from >= 4 {
				ins = `INSERT INTO audit_log (time_ns, correlation_id, session_id, phase, allowed, dry_run, latency_ms, request_id) VALUES (?, ?, 's', 'outcome', 1, 0, 0.5, 'r')`
			}
			for i := range 3 {
				if _, err := db.Exec(ins, int64(i)*int64(time.Second), fmt.Sprint("c", i)); err != nil {
					t.Fatal(err)
				}
			}
			all, err := QuerySQL(ctx, db, SQLite, Filter{SessionID: "s"})
			if err != nil || len(all) != 3 {
				t.Fatalf("Filter{SessionID}: %d events, %v", len(all), err)
			}
			for _, e := range all {
				if e.ParentID != "" {
					t.Errorf("%s: parent %q, want none", e.CorrelationID, e.ParentID)
				}
			}
			for _, f := range []Filter{{ParentID: "c0"}, {ParentID: "c0", SessionID: "s"}, {ParentID: "c0", RequestID: "r"},
				{ParentID: "c0", CorrelationID: "c1"}, {ParentID: "c0", Limit: 1, Offset: 1}} {
				if got, err := QuerySQL(ctx, db, SQLite, f); err != nil || len(got) != 0 {
					t.Errorf("%+v: %d events, %v; want none", f, len(got), err)
				}
			}
			if got, err := QuerySQL(ctx, db, SQLite, Filter{RequestID: "r"}); err != nil || len(got) != 3*b2i(from >= 4) {
				t.Errorf("Filter{RequestID}: %d events, %v", len(got), err)
			}
			var v int
			if err := db.QueryRow(`SELECT MAX(version) FROM audit_schema_version`).Scan(&v); err != nil || v != from {
				t.Errorf("version %d after the queries (%v), want %d: QuerySQL changed the table", v, err, from)
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

// TestReview31Parent2SQLiteUpgradeLarge: a version 5 SQLite table of
// 50,000 rows is upgraded to version 6 by a sink without rewriting it: the
// new column's default rewrites no row, and the partial index holds none of
// them, so the database grows by a few pages, not by a copy of the table
// (about 3,400 pages; its time is logged, not judged: a timed assertion
// fails on a slow host). It had 200,000 rows: about 90 s under -race, most
// of it filling the table; a quarter of them shows a copy as plainly.
func TestReview31Parent2SQLiteUpgradeLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("50k rows")
	}
	ctx := context.Background()
	db, err := OpenSQLite(filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE audit_schema_version (version INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for to := 1; to <= 5; to++ {
		for _, q := range migration(to, SQLite) {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := db.Exec(`INSERT INTO audit_schema_version (version) VALUES (5)`); err != nil {
		t.Fatal(err)
	}
	const n = 50_000
	// A recursive CTE fills the table in one statement.
	if _, err := db.Exec(`WITH RECURSIVE i(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM i WHERE x + 1 < ?)
INSERT INTO audit_log (time_ns, correlation_id, session_id, subject, tool, class, phase, allowed, dry_run, latency_ms, args_sha256, request_id, time)
SELECT x * 1000000, printf('c-%08d', x), printf('s-%04d', x % 1000), 'alice', 'trigger_refund', 'write', 'outcome', 1, 0, 0.5,
 '0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef', CASE WHEN x % 10 = 0 THEN printf('gw-%d', x) ELSE '' END, '' FROM i`, n); err != nil {
		t.Fatal(err)
	}
	pages := func() (n int64) {
		t.Helper()
		if err := db.QueryRow(`PRAGMA page_count`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := pages()
	start := time.Now()
	s, err := NewSQL(ctx, db, SQLite, nil)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	after := pages()
	t.Logf("upgrade of %d rows from version 5: %v, %d pages then %d", n, took, before, after)
	if after-before > 16 {
		t.Errorf("the upgrade of %d rows grew the database from %d to %d pages: it rewrote the table", n, before, after)
	}
	e := Event{Time: time.Unix(0, n*1000000), CorrelationID: "new", ParentID: "c-00000007", Phase: PhaseOutcome}
	if err := s.WriteDurable(ctx, &e); err != nil {
		t.Fatal(err)
	}
	got, err := s.Query(ctx, Filter{ParentID: "c-00000007"})
	if err != nil || len(got) != 1 || got[0].CorrelationID != "new" {
		t.Errorf("Filter{ParentID} after the upgrade: %+v, %v", got, err)
	}
	var cnt int
	if err := db.QueryRow(`SELECT COUNT(*) FROM audit_log WHERE parent_id = ''`).Scan(&cnt); err != nil || cnt != n {
		t.Errorf("%d rows without a parent (%v), want %d", cnt, err, n)
	}
}

// TestReview31Parent2OddParent: a parent id with a NUL byte and invalid
// UTF-8 is recorded as every other text field is (U+FFFD for each), by a
// JSONL sink (Write and Keep) and a SQLite sink alike, and Filter.ParentID
// finds it by the id as given; one too long for a JSONL line is refused,
// never written as a line ReadJSONL cannot read.
func TestReview31Parent2OddParent(t *testing.T) {
	ctx := context.Background()
	odd := "p\x00q\xffr"
	const want = "p\uFFFDq\uFFFDr"
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	j, err := OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := Event{Time: at, CorrelationID: "w", ParentID: odd, Phase: PhaseOutcome}
	k := Event{Time: at.Add(time.Millisecond), CorrelationID: "k", ParentID: odd, Phase: PhaseOutcome}
	if err := j.Write(ctx, &w); err != nil {
		t.Fatal(err)
	}
	if err := j.Keep(ctx, &k, nil); err != nil {
		t.Fatal(err)
	}
	long := Event{Time: at, CorrelationID: "long", ParentID: strings.Repeat("\x01", MaxLineSize/6+1), Phase: PhaseOutcome}
	if err := j.Keep(ctx, &long, nil); !errors.Is(err, ErrInvalidEvent) {
		t.Errorf("Keep of a parent id too long for a line: %v, want ErrInvalidEvent", err)
	}
	if err := j.Write(ctx, &long); !errors.Is(err, ErrInvalidEvent) {
		t.Errorf("Write of a parent id too long for a line: %v, want ErrInvalidEvent", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := OpenSQLite(filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := NewSQL(ctx, db, SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, e := range []Event{w, k} {
		if err := s.WriteDurable(ctx, &e); err != nil {
			t.Fatal(err)
		}
	}
	for name, query := range map[string]func(Filter) ([]Event, error){
		"jsonl":  func(f Filter) ([]Event, error) { return QueryJSONL(path, f) },
		"sqlite": func(f Filter) ([]Event, error) { return s.Query(ctx, f) },
	} {
		for _, f := range []Filter{{}, {ParentID: odd}, {ParentID: want}} {
			got, err := query(f)
			if err != nil || len(got) != 2 {
				t.Errorf("%s: %+v: %d events, %v; want 2", name, f, len(got), err)
				continue
			}
			for _, e := range got {
				if e.ParentID != want {
					t.Errorf("%s: %s: parent %q, want %q", name, e.CorrelationID, e.ParentID, want)
				}
			}
		}
	}
}
