package pgtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpguard/mcpguard/audit"
)

// late14SchemaV3 is audit_log as version 3 of this package left it on
// PostgreSQL (version 1's table, version 3's prefix indexes).
var late14SchemaV3 = []string{
	`CREATE TABLE audit_schema_version (version INTEGER NOT NULL)`,
	`INSERT INTO audit_schema_version (version) VALUES (3)`,
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
	`CREATE INDEX audit_log_session ON audit_log (left(session_id, 256), time_ns)`,
	`CREATE INDEX audit_log_subject ON audit_log (left(subject, 256), time_ns)`,
	`CREATE INDEX audit_log_tool ON audit_log (left(tool, 256), time_ns)`,
	`CREATE INDEX audit_log_time ON audit_log (time_ns)`,
	`CREATE INDEX audit_log_correlation ON audit_log (left(correlation_id, 256))`,
}

// late14Event returns an event whose every field holds a value of its own.
func late14Event(i int) audit.Event {
	s := func(f string) string { return fmt.Sprintf("%s-%d", f, i) }
	return audit.Event{
		Time:          time.Date(2026, 7, 28, 10, 0, i, 123456000, time.UTC),
		CorrelationID: s("corr"), RequestID: s("req"), SessionID: s("sess"), Subject: s("subj"),
		Roles: []string{s("role")}, Tool: s("tool"), Class: s("class"), Phase: audit.PhaseIntent,
		Allowed: true, DryRun: false, Code: s("code"), Detail: s("detail"), LatencyMS: 1.25 + float64(i),
		ArgsSHA256: s("hash"), Cost: 7.5 + float64(i), ProtocolVersion: s("proto"), ClientName: s("client"),
		Args: map[string]any{"k": s("arg")},
	}
}

// TestLate14PostgresUpgradeV3: a version 3 database is upgraded to 4 by
// four openers at once; every row is kept with request_id "" and its other
// fields as they were; the new rows hold each field in its own column.
func TestLate14PostgresUpgradeV3(t *testing.T) {
	var srv server
	db := srv.db(t)
	ctx := context.Background()
	for _, q := range late14SchemaV3 {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var want []audit.Event
	for i := range 50 {
		e := late14Event(100 + i)
		e.RequestID = ""
		if _, err := db.Exec(`INSERT INTO audit_log (time_ns, correlation_id, session_id, subject, roles, tool, class, phase, allowed, dry_run, code, detail, latency_ms, args_sha256, cost, protocol_version, client_name, args)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
			e.Time.UnixNano(), e.CorrelationID, e.SessionID, e.Subject, `["`+e.Roles[0]+`"]`, e.Tool, e.Class,
			string(e.Phase), e.Allowed, e.DryRun, e.Code, e.Detail, e.LatencyMS, e.ArgsSHA256, e.Cost,
			e.ProtocolVersion, e.ClientName, `{"k":"arg-`+fmt.Sprint(100+i)+`"}`); err != nil {
			t.Fatal(err)
		}
		want = append(want, e)
	}

	const n = 4
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := audit.NewSQL(ctx, db, audit.Postgres, &audit.SQLOptions{OnError: func(error) {}})
			if err != nil {
				t.Errorf("NewSQL %d: %v", i, err)
				return
			}
			defer s.Close()
			e := late14Event(i)
			if err := s.WriteDurable(ctx, &e); err != nil {
				t.Errorf("WriteDurable %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	for i := range n {
		want = append(want, late14Event(i))
	}
	got, err := audit.QuerySQL(ctx, db, audit.Postgres, audit.Filter{})
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
	if err := db.QueryRow(`SELECT COUNT(*), MAX(version) FROM audit_schema_version`).Scan(&rows, &v); err != nil {
		t.Fatal(err)
	}
	if rows != 2 || v != audit.SchemaVersion {
		t.Errorf("audit_schema_version: %d rows, max %d; want 2 rows (3, then %d)", rows, v, audit.SchemaVersion)
	}

	// By column name: a value bound to another column shows here, where
	// Query, which reads in the INSERT's order, cannot see it.
	for i := range n {
		e := late14Event(i)
		var reqID, client, proto, args, roles, detail, code string
		var allowed, dry bool
		var lat, cost float64
		var ns int64
		if err := db.QueryRow(`SELECT request_id, client_name, protocol_version, args, roles, detail, code, allowed, dry_run, latency_ms, cost, time_ns FROM audit_log WHERE correlation_id = $1`,
			e.CorrelationID).Scan(&reqID, &client, &proto, &args, &roles, &detail, &code, &allowed, &dry, &lat, &cost, &ns); err != nil {
			t.Fatal(err)
		}
		got := []any{reqID, client, proto, args, roles, detail, code, allowed, dry, lat, cost, ns}
		want := []any{e.RequestID, e.ClientName, e.ProtocolVersion, fmt.Sprintf(`{"k":"arg-%d"}`, i), `["` + e.Roles[0] + `"]`,
			e.Detail, e.Code, true, false, e.LatencyMS, e.Cost, e.Time.UnixNano()}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("row %s by column (-want +got):\n%s", e.CorrelationID, diff)
		}
	}
}

// TestLate14PostgresRequestIDOddBytes: NUL and invalid UTF-8, which
// PostgreSQL refuses in text, are stored in request_id as U+FFFD, as in
// the other text columns: the event is not lost.
func TestLate14PostgresRequestIDOddBytes(t *testing.T) {
	var srv server
	ctx := context.Background()
	s, err := audit.NewSQL(ctx, srv.db(t), audit.Postgres, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := late14Event(1)
	e.RequestID = "a\x00b\xffc"
	if err := s.WriteDurable(ctx, &e); err != nil {
		t.Fatal(err)
	}
	got, err := s.Query(ctx, audit.Filter{CorrelationID: e.CorrelationID})
	if err != nil || len(got) != 1 || got[0].RequestID != "a\uFFFDb\uFFFDc" {
		t.Errorf("Query: %+v, %v; want one record with request_id %q", got, err, "a\uFFFDb\uFFFDc")
	}
}

// TestLate14PostgresQuerySQLReadsVersion3: QuerySQL reads a version 3
// table no sink has upgraded (a reporting tool's read-only role could not
// upgrade it): its rows, with request_id "".
func TestLate14PostgresQuerySQLReadsVersion3(t *testing.T) {
	var srv server
	db := srv.db(t)
	ctx := context.Background()
	for _, q := range late14SchemaV3 {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	e := late14Event(5)
	e.RequestID, e.Args = "", nil
	if _, err := db.Exec(`INSERT INTO audit_log (time_ns, correlation_id, session_id, subject, roles, tool, class, phase, allowed, dry_run, code, detail, latency_ms, args_sha256, cost, protocol_version, client_name)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
		e.Time.UnixNano(), e.CorrelationID, e.SessionID, e.Subject, `["`+e.Roles[0]+`"]`, e.Tool, e.Class,
		string(e.Phase), e.Allowed, e.DryRun, e.Code, e.Detail, e.LatencyMS, e.ArgsSHA256, e.Cost,
		e.ProtocolVersion, e.ClientName); err != nil {
		t.Fatal(err)
	}
	got, err := audit.QuerySQL(ctx, db, audit.Postgres, audit.Filter{Tool: e.Tool})
	if err != nil {
		t.Fatalf("QuerySQL on a version 3 database: %v", err)
	}
	if diff := cmp.Diff([]audit.Event{e}, got); diff != "" {
		t.Errorf("QuerySQL on a version 3 database (-want +got):\n%s", diff)
	}
}
