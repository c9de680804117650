package audit_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
)

// schemaV1SQLite is audit_log as version 1 of this package created it on
// SQLite, with its generated column time.
func schemaV1SQLite() []string {
	return []string{
		`CREATE TABLE audit_schema_version (version INTEGER NOT NULL)`,
		`INSERT INTO audit_schema_version (version) VALUES (1)`,
		`CREATE TABLE audit_log (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	time_ns INTEGER NOT NULL,
	correlation_id TEXT NOT NULL,
	session_id TEXT NOT NULL DEFAULT '',
	subject TEXT NOT NULL DEFAULT '',
	roles TEXT NOT NULL DEFAULT '',
	tool TEXT NOT NULL DEFAULT '',
	class TEXT NOT NULL DEFAULT '',
	phase TEXT NOT NULL,
	allowed INTEGER NOT NULL,
	dry_run INTEGER NOT NULL,
	code TEXT NOT NULL DEFAULT '',
	detail TEXT NOT NULL DEFAULT '',
	latency_ms REAL NOT NULL,
	args_sha256 TEXT NOT NULL DEFAULT '',
	cost REAL NOT NULL DEFAULT 0,
	protocol_version TEXT NOT NULL DEFAULT '',
	client_name TEXT NOT NULL DEFAULT '',
	args TEXT,
	time TEXT GENERATED ALWAYS AS (strftime('%Y-%m-%dT%H:%M:%fZ', time_ns / 1000000 / 1000.0, 'unixepoch')) VIRTUAL
)`,
		`CREATE INDEX audit_log_session ON audit_log (session_id, time_ns)`,
		`CREATE INDEX audit_log_subject ON audit_log (subject, time_ns)`,
		`CREATE INDEX audit_log_tool ON audit_log (tool, time_ns)`,
		`CREATE INDEX audit_log_time ON audit_log (time_ns)`,
		`CREATE INDEX audit_log_correlation ON audit_log (correlation_id)`,
	}
}

// awkwardTimes are instants whose column time is easy to get wrong: before
// 1970 with a fraction of a millisecond (truncated toward zero), the ends
// of the range, a leap day.
func awkwardTimes() []time.Time {
	return []time.Time{
		time.Date(2026, 7, 28, 9, 0, 1, 0, time.UTC),
		time.Unix(0, -1_500_000).UTC(),
		time.Unix(0, -1).UTC(),
		time.Unix(0, 500_000).UTC(),
		time.Date(1678, 1, 1, 0, 0, 0, 123_456_789, time.UTC),
		time.Date(1900, 3, 1, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(2000, 2, 29, 12, 0, 0, 999_999, time.UTC),
		time.Date(2261, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
	}
}

// TestSQLiteMigrateV1: a version 1 file (rows included) is upgraded in
// place; its rows keep their column time; the rows the sink writes get the
// text the generated column computed.
func TestSQLiteMigrateV1(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	for _, q := range schemaV1SQLite() {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	awkwardTimes := awkwardTimes()
	var wantTimes []string
	for i, tm := range awkwardTimes {
		if _, err := db.Exec(`INSERT INTO audit_log (time_ns, correlation_id, phase, allowed, dry_run, latency_ms) VALUES (?, ?, 'outcome', 1, 0, 0.5)`,
			tm.UnixNano(), "old"+string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	wantTimes = append(wantTimes, timeColumn(t, db)...)

	s, err := audit.NewSQL(ctx, db, audit.SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gotTimes := timeColumn(t, db)
	if diff := cmp.Diff(wantTimes, gotTimes); diff != "" {
		t.Errorf("column time of the rows of version 1 (-want +got):\n%s", diff)
	}
	var v int
	if err := db.QueryRow(`SELECT MAX(version) FROM audit_schema_version`).Scan(&v); err != nil || v != audit.SchemaVersion {
		t.Errorf("schema version %d (%v), want %d", v, err, audit.SchemaVersion)
	}

	// New rows, batched and durable: the column time holds what the
	// expression of version 1 gives.
	for i, tm := range awkwardTimes {
		e := event("new"+string(rune('a'+i)), 0)
		e.Time = tm
		write := s.Write
		if i%2 == 1 {
			write = s.WriteDurable
		}
		if err := write(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var n, wrong int
	if err := db.QueryRow(`SELECT COUNT(*), COUNT(*) FILTER (WHERE time IS NOT strftime('%Y-%m-%dT%H:%M:%fZ', time_ns / 1000000 / 1000.0, 'unixepoch')) FROM audit_log`).Scan(&n, &wrong); err != nil {
		t.Fatal(err)
	}
	if n != 2*len(awkwardTimes) || wrong != 0 {
		t.Errorf("audit_log has %d rows, %d with a wrong column time; want %d rows, none wrong", n, wrong, 2*len(awkwardTimes))
		rows, _ := db.Query(`SELECT correlation_id, time_ns, time, strftime('%Y-%m-%dT%H:%M:%fZ', time_ns / 1000000 / 1000.0, 'unixepoch') FROM audit_log`)
		for rows.Next() {
			var id, got, want string
			var ns int64
			rows.Scan(&id, &ns, &got, &want)
			if got != want {
				t.Logf("%s (%d): time %q, want %q", id, ns, got, want)
			}
		}
		rows.Close()
	}
	got, err := s.Query(ctx, audit.Filter{Since: awkwardTimes[0], Until: awkwardTimes[0].Add(time.Second)})
	if err != nil || len(got) != 2 {
		t.Errorf("Query over the migrated table = %d events, %v; want 2", len(got), err)
	}
}

// timeColumn returns the column time of audit_log's rows in id order.
func timeColumn(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT time FROM audit_log ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
