package audit_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestReview64aPostgresTrailBehindUserSchema: a PostgreSQL trail created
// where the default search_path ("$user", public) put it, public, while no
// schema named after the role existed. Then the schema "$user" is created
// (PostgreSQL's documented secure schema usage pattern, common after the
// version 15 upgrade that took CREATE on public from every role). The next
// NewSQL finds audit_schema_version and audit_log by that search_path, in
// public: it must upgrade or use them, or refuse saying where they are.
// It created an empty audit_schema_version and audit_log in the new
// schema instead, without a word: every later record went there, and
// Query no longer saw one record of the trail.
func TestReview64aPostgresTrailBehindUserSchema(t *testing.T) {
	pg := testsvc.StartPostgres(t)
	admin, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE review64a"); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/review64a?sslmode=disable", pg.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()

	s, err := audit.NewSQL(ctx, db, audit.Postgres, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := &audit.Event{Time: time.Unix(1_700_000_000, 0).UTC(), CorrelationID: "before", Phase: audit.PhaseOutcome,
		Subject: "alice", Tool: "refund", Allowed: true}
	if err := s.WriteDurable(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var where string
	if err := db.QueryRow(`SELECT table_schema FROM information_schema.tables WHERE table_name = 'audit_log'`).Scan(&where); err != nil || where != "public" {
		t.Fatalf("the trail is in schema %q (%v), want public", where, err)
	}

	// The role's own schema appears: "$user" now names it.
	if _, err := db.Exec(`CREATE SCHEMA postgres`); err != nil {
		t.Fatal(err)
	}
	db.SetMaxIdleConns(0) // fresh sessions, as after a restart

	s, err = audit.NewSQL(ctx, db, audit.Postgres, nil)
	if err != nil {
		t.Logf("refused, as it may be: %v", err)
		return
	}
	defer s.Close()
	if err := s.WriteDurable(ctx, &audit.Event{Time: time.Unix(1_700_000_100, 0).UTC(), CorrelationID: "after",
		Phase: audit.PhaseOutcome, Subject: "alice", Tool: "refund", Allowed: true}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Query(ctx, audit.Filter{Subject: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range got {
		ids = append(ids, e.CorrelationID)
	}
	var schemas []string
	rows, err := db.Query(`SELECT table_schema || '.' || table_name FROM information_schema.tables
		WHERE table_name IN ('audit_log', 'audit_schema_version') ORDER BY 1`)
	if err == nil {
		for rows.Next() {
			var n string
			rows.Scan(&n)
			schemas = append(schemas, n)
		}
		rows.Close()
	}
	if len(ids) != 2 {
		t.Errorf("NewSQL accepted the database, but Query of the trail reads %v, want [before after]; "+
			"tables now: %v (a second, empty trail was started beside the first)", ids, schemas)
	}
}
