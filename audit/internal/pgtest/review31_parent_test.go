package pgtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestReview31PostgresParent: a PostgreSQL sink stores an inner call's
// parent (through the batch writer and WriteDurable), Query and QuerySQL
// read it back, and Filter.ParentID selects through the partial index of
// version 6; a version 5 table with rows, as the previous build left it,
// is read by QuerySQL as it is, then upgraded in place by a sink: the rows
// kept without a parent, new rows with theirs.
func TestReview31PostgresParent(t *testing.T) {
	var srv server
	srv.once.Do(func() { srv.pg = testsvc.StartPostgres(t) }) // for both subtests
	ctx := context.Background()
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	ev := func(corr, parent string, i int) audit.Event {
		return audit.Event{Time: at.Add(time.Duration(i) * time.Millisecond), CorrelationID: corr, ParentID: parent,
			RequestID: "gw-1", Tool: "trigger_refund", Phase: audit.PhaseOutcome, Allowed: true}
	}
	t.Run("round_trip", func(t *testing.T) {
		db := srv.db(t)
		s, err := audit.NewSQL(ctx, db, audit.Postgres, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for i := range 600 {
			parent := ""
			if i%3 != 0 {
				parent = fmt.Sprintf("c-%05d", i-i%3) // the outer call of i is the call i-i%3
			}
			e := ev(fmt.Sprintf("c-%05d", i), parent, i)
			if i == 5 {
				e.Phase = audit.PhaseIntent
				if err := s.WriteDurable(ctx, &e); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := s.Write(ctx, &e); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		for name, query := range map[string]func(audit.Filter) ([]audit.Event, error){
			"Query":    func(f audit.Filter) ([]audit.Event, error) { return s.Query(ctx, f) },
			"QuerySQL": func(f audit.Filter) ([]audit.Event, error) { return audit.QuerySQL(ctx, db, audit.Postgres, f) },
		} {
			got, err := query(audit.Filter{ParentID: "c-00003"})
			var ids []string
			for _, e := range got {
				ids = append(ids, e.CorrelationID+"<"+e.ParentID)
			}
			if want := "c-00004<c-00003 c-00005<c-00003"; err != nil || strings.Join(ids, " ") != want {
				t.Errorf("%s: Filter{ParentID: c-00003}: %v, %v; want %s", name, ids, err, want)
			}
			if top, err := query(audit.Filter{CorrelationID: "c-00003"}); err != nil || len(top) != 1 || top[0].ParentID != "" {
				t.Errorf("%s: the outer call: %+v, %v; want no parent", name, top, err)
			}
		}
		if _, err := db.Exec(`ANALYZE audit_log`); err != nil {
			t.Fatal(err)
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.Exec(`SET LOCAL enable_seqscan = off`); err != nil {
			t.Fatal(err)
		}
		const q = `SELECT time_ns, correlation_id, session_id, subject, roles, tool, class, phase, allowed, dry_run, code, detail, latency_ms, args_sha256, cost, protocol_version, client_name, args, request_id, parent_id FROM audit_log WHERE parent_id <> '' AND left(parent_id, 256) = left($1, 256) AND parent_id = $1 ORDER BY time_ns, id`
		rows, err := tx.Query(`EXPLAIN `+q, "c-00003")
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		rows.Close()
		if all := strings.Join(plan, "\n"); !strings.Contains(all, "audit_log_parent") {
			t.Errorf("plan of Filter{ParentID} does not use audit_log_parent:\n%s", all)
		}
	})
	t.Run("upgrade_v5", func(t *testing.T) {
		db := srv.db(t)
		s, err := audit.NewSQL(ctx, db, audit.Postgres, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, corr := range []string{"old-1", "old-2"} {
			e := ev(corr, "", i)
			if err := s.WriteDurable(ctx, &e); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		// Version 5 as the previous build left it (dropping the column
		// drops its index).
		for _, q := range []string{`ALTER TABLE audit_log DROP COLUMN parent_id`, `DELETE FROM audit_schema_version`,
			`INSERT INTO audit_schema_version (version) VALUES (5)`} {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if old, err := audit.QuerySQL(ctx, db, audit.Postgres, audit.Filter{RequestID: "gw-1"}); err != nil || len(old) != 2 {
			t.Fatalf("QuerySQL of a version 5 table: %+v, %v", old, err)
		}
		if got, err := audit.QuerySQL(ctx, db, audit.Postgres, audit.Filter{ParentID: "old-1"}); err != nil || len(got) != 0 {
			t.Errorf("Filter{ParentID} of a version 5 table: %+v, %v; want none", got, err)
		}
		s, err = audit.NewSQL(ctx, db, audit.Postgres, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var v, ix int
		if err := db.QueryRow(`SELECT MAX(version) FROM audit_schema_version`).Scan(&v); err != nil || v != audit.SchemaVersion || v < 6 {
			t.Errorf("schema version %d (%v), want %d (at least 6)", v, err, audit.SchemaVersion)
		}
		if err := db.QueryRow(`SELECT COUNT(*) FROM pg_indexes WHERE indexname = 'audit_log_parent'`).Scan(&ix); err != nil || ix != 1 {
			t.Errorf("audit_log_parent: %d indexes (%v), want 1", ix, err)
		}
		in := ev("new-1", "old-1", 2)
		if err := s.WriteDurable(ctx, &in); err != nil {
			t.Fatal(err)
		}
		all, err := s.Query(ctx, audit.Filter{})
		if err != nil || len(all) != 3 {
			t.Fatalf("rows after the upgrade: %d, %v; want 3", len(all), err)
		}
		for i, want := range []string{"", "", "old-1"} {
			if all[i].ParentID != want || all[i].RequestID != "gw-1" {
				t.Errorf("row %s after the upgrade: parent %q request %q, want %q gw-1", all[i].CorrelationID, all[i].ParentID, all[i].RequestID, want)
			}
		}
	})
}
