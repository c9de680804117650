package pgtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// requestQuery is the query audit's Filter{RequestID: $1} runs on
// PostgreSQL (TestQuerySQLRequestIDText in package audit pins the same
// text).
const requestQuery = `SELECT time_ns, correlation_id, session_id, subject, roles, tool, class, phase, allowed, dry_run, code, detail, latency_ms, args_sha256, cost, protocol_version, client_name, args, request_id, parent_id FROM audit_log WHERE request_id <> '' AND left(request_id, 256) = left($1, 256) AND request_id = $1 ORDER BY time_ns, id`

// TestReview15PostgresRequestIndex: schema version 5 indexes request_id
// (its first 256 characters, for the rows that have one). A query by
// request id searches that index; a request id far longer than a B-tree
// entry may hold is still stored; and the query finds exactly the rows
// of its id, the long one included.
func TestReview15PostgresRequestIndex(t *testing.T) {
	var srv server
	db := srv.db(t)
	ctx := context.Background()
	s, err := audit.NewSQL(ctx, db, audit.Postgres, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	long := incompressible(4000)
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range 3000 {
		e := audit.Event{Time: base.Add(time.Duration(i) * time.Microsecond), CorrelationID: fmt.Sprintf("c-%05d", i),
			Tool: "t", Phase: audit.PhaseOutcome, Allowed: true}
		if i%3 != 0 {
			e.RequestID = fmt.Sprintf("gw-%05d", i%500)
		}
		if i == 7 {
			e.RequestID = long
		}
		if err := s.Write(ctx, &e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.Query(ctx, audit.Filter{RequestID: "gw-00042"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range got {
		ids = append(ids, e.CorrelationID)
	}
	// i%500 == 42 and i%3 != 0: 42 (0), 542 (2), 1042 (1), 1542 (0), 2042 (2), 2542 (1).
	if want := "c-00542 c-01042 c-02042 c-02542"; strings.Join(ids, " ") != want {
		t.Errorf("Filter{RequestID: gw-00042}: %v, want %s", ids, want)
	}
	if got, err := s.Query(ctx, audit.Filter{RequestID: long}); err != nil || len(got) != 1 || got[0].CorrelationID != "c-00007" {
		t.Errorf("Filter{RequestID: 4000 characters}: %d events, %v", len(got), err)
	}
	if got, err := s.Query(ctx, audit.Filter{RequestID: long[:256]}); err != nil || len(got) != 0 {
		t.Errorf("Filter{RequestID: the long id's prefix}: %d events, %v; want none", len(got), err)
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
	rows, err := tx.Query(`EXPLAIN `+requestQuery, "gw-00042")
	if err != nil {
		t.Fatal(err)
	}
	var plan string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan += line + "\n"
	}
	rows.Close()
	if !strings.Contains(plan, "audit_log_request") {
		t.Errorf("a request id filter does not use audit_log_request:\n%s", plan)
	}
}
