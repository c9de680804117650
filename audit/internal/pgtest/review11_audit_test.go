package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// incompressible returns n bytes of random base64: PostgreSQL compresses an
// index entry before it checks its size, so a repeated character would fit.
func incompressible(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawStdEncoding.EncodeToString(b)[:n]
}

// TestPostgresLongIndexedFields checks that an event whose session id,
// subject, tool or correlation id is longer than a B-tree entry of
// PostgreSQL may be (about 2.7 kB) is recorded and found. Those columns
// were indexed whole: PostgreSQL refused the row ("index row size exceeds
// btree maximum"), so a client that named an unknown tool with 3 kB (or
// sent a 3 kB session id) had its refusal dropped from the trail, after
// the retries of every batch it was in had held the writer up.
func TestPostgresLongIndexedFields(t *testing.T) {
	var srv server
	srv.once.Do(func() { srv.pg = testsvc.StartPostgres(t) })
	ctx := context.Background()
	var lost []error
	s, err := audit.NewSQL(ctx, srv.db(t), audit.Postgres, &audit.SQLOptions{OnError: func(err error) { lost = append(lost, err) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC)
	long := func(f func(e *audit.Event, v string)) *audit.Event {
		e := &audit.Event{Time: base, CorrelationID: "c", SessionID: "s", Subject: "u", Tool: "t",
			Phase: audit.PhaseOutcome, Code: "TOOL_NOT_FOUND"}
		f(e, incompressible(3000))
		return e
	}
	events := []*audit.Event{
		long(func(e *audit.Event, v string) { e.Tool, e.CorrelationID = v, "c-tool" }),
		long(func(e *audit.Event, v string) { e.SessionID, e.CorrelationID = v, "c-session" }),
		long(func(e *audit.Event, v string) { e.Subject, e.CorrelationID = v, "c-subject" }),
		long(func(e *audit.Event, v string) { e.CorrelationID = v }),
	}
	for _, e := range events {
		if err := s.Write(ctx, e); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Errorf("Flush: %v", err)
	}
	if st := s.Stats(); st.Lost != 0 {
		t.Errorf("%d events lost: %v", st.Lost, lost)
	}
	// WriteDurable (a write's intent) too.
	e := long(func(e *audit.Event, v string) { e.SessionID, e.CorrelationID = v, "c-durable" })
	if err := s.WriteDurable(ctx, e); err != nil {
		t.Errorf("WriteDurable: %v", err)
	}
	events = append(events, e)
	for i, e := range events {
		for _, f := range []audit.Filter{
			{Tool: e.Tool, SessionID: e.SessionID, CorrelationID: e.CorrelationID},
			{Subject: e.Subject, CorrelationID: e.CorrelationID},
		} {
			got, err := s.Query(ctx, f)
			if err != nil || len(got) != 1 || got[0].Tool != e.Tool || got[0].SessionID != e.SessionID ||
				got[0].Subject != e.Subject || got[0].CorrelationID != e.CorrelationID {
				t.Errorf("event %d: Query found %d events (%v), want it, whole", i, len(got), err)
			}
		}
	}
	// A value sharing the long one's first characters is another value.
	other := events[0].Tool[:2000] + "x"
	if got, err := s.Query(ctx, audit.Filter{Tool: other}); err != nil || len(got) != 0 {
		t.Errorf("Query by a prefix of a long tool: %d events, %v; want none", len(got), err)
	}
}

// TestPostgresMigrateToPrefixIndexes checks the upgrade of a version 2
// table (whole-value indexes) in place: its rows stay and are found, the
// indexes become prefix indexes a filter's query uses, and a long value is
// then stored.
func TestPostgresMigrateToPrefixIndexes(t *testing.T) {
	var srv server
	srv.once.Do(func() { srv.pg = testsvc.StartPostgres(t) })
	ctx := context.Background()
	db := srv.db(t)
	for _, q := range []string{
		`CREATE TABLE audit_schema_version (version INTEGER NOT NULL)`,
		`INSERT INTO audit_schema_version (version) VALUES (2)`,
		`CREATE TABLE audit_log (
	id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	time_ns BIGINT NOT NULL,
	correlation_id TEXT NOT NULL,
	session_id TEXT NOT NULL DEFAULT '',
	subject TEXT NOT NULL DEFAULT '',
	roles TEXT NOT NULL DEFAULT '',
	tool TEXT NOT NULL DEFAULT '',
	class TEXT NOT NULL DEFAULT '',
	phase TEXT NOT NULL,
	allowed BOOLEAN NOT NULL,
	dry_run BOOLEAN NOT NULL,
	code TEXT NOT NULL DEFAULT '',
	detail TEXT NOT NULL DEFAULT '',
	latency_ms DOUBLE PRECISION NOT NULL,
	args_sha256 TEXT NOT NULL DEFAULT '',
	cost DOUBLE PRECISION NOT NULL DEFAULT 0,
	protocol_version TEXT NOT NULL DEFAULT '',
	client_name TEXT NOT NULL DEFAULT '',
	args TEXT,
	time TIMESTAMPTZ GENERATED ALWAYS AS (to_timestamp((time_ns / 1000)::double precision / 1000000)) STORED
)`,
		`CREATE INDEX audit_log_session ON audit_log (session_id, time_ns)`,
		`CREATE INDEX audit_log_subject ON audit_log (subject, time_ns)`,
		`CREATE INDEX audit_log_tool ON audit_log (tool, time_ns)`,
		`CREATE INDEX audit_log_time ON audit_log (time_ns)`,
		`CREATE INDEX audit_log_correlation ON audit_log (correlation_id)`,
		`INSERT INTO audit_log (time_ns, correlation_id, session_id, subject, tool, phase, allowed, dry_run, latency_ms)
			VALUES (1785232800000000000, 'old', 's-old', 'alice', 'search_docs', 'outcome', true, false, 1.5)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s, err := audit.NewSQL(ctx, db, audit.Postgres, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v int
	if err := db.QueryRow(`SELECT MAX(version) FROM audit_schema_version`).Scan(&v); err != nil || v != audit.SchemaVersion {
		t.Errorf("schema version %d (%v), want %d", v, err, audit.SchemaVersion)
	}
	got, err := s.Query(ctx, audit.Filter{SessionID: "s-old", Subject: "alice", Tool: "search_docs", CorrelationID: "old"})
	if err != nil || len(got) != 1 {
		t.Errorf("the row from before the upgrade: %d events, %v", len(got), err)
	}
	e := &audit.Event{Time: time.Now(), CorrelationID: "new", SessionID: incompressible(4000), Phase: audit.PhaseOutcome}
	if err := s.WriteDurable(ctx, e); err != nil {
		t.Errorf("WriteDurable of a long session id after the upgrade: %v", err)
	}
	// The filter's condition goes through the prefix index.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`SET LOCAL enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	var plan string
	rows, err := tx.Query(`EXPLAIN SELECT id FROM audit_log WHERE left(session_id, 256) = left($1, 256) AND session_id = $1 ORDER BY time_ns, id`, "s-old")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var line string
		rows.Scan(&line)
		plan += line + "\n"
	}
	rows.Close()
	if !strings.Contains(plan, "audit_log_session") {
		t.Errorf("a session filter does not use audit_log_session:\n%s", plan)
	}
}
