package audit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestSQLiteQueryPlans: a Filter by session, subject, tool, correlation id,
// request id or time range searches an index of audit_log (EXPLAIN QUERY PLAN); one
// by outcome alone (or none) reads the time index in order, stopping at
// Limit, never the table in rowid order; and the order (time_ns, id) needs
// no sort of the rows found but for a correlation or request id (a handful
// of rows).
func TestSQLiteQueryPlans(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	s := newSQLiteSink(t, db, nil)
	for i, e := range floodEvents("p", 2000) {
		e.Allowed = i%10 != 0
		if i%2 == 0 {
			e.RequestID = fmt.Sprintf("gw-%05d", i/2)
		}
		if err := s.Write(ctx, &e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 7, 28, 10, 0, 0, 500_000, time.UTC)
	denied := false
	for _, tc := range []struct {
		name  string
		f     audit.Filter
		index string
		sorts bool
	}{
		{name: "session", f: audit.Filter{SessionID: "sess-07"}, index: "audit_log_session"},
		{name: "session_since", f: audit.Filter{SessionID: "sess-07", Since: since}, index: "audit_log_session"},
		{name: "subject", f: audit.Filter{Subject: "user03", Limit: 10}, index: "audit_log_subject"},
		{name: "tool", f: audit.Filter{Tool: "tool_1"}, index: "audit_log_tool"},
		{name: "correlation", f: audit.Filter{CorrelationID: "p-00042"}, index: "audit_log_correlation", sorts: true},
		{name: "request", f: audit.Filter{RequestID: "gw-00042"}, index: "audit_log_request", sorts: true},
		{name: "time_range", f: audit.Filter{Since: since, Until: since.Add(time.Millisecond)}, index: "audit_log_time"},
		{name: "outcome", f: audit.Filter{Allowed: &denied, Limit: 5}, index: "audit_log_time"},
		{name: "outcome_code", f: audit.Filter{Code: "FORBIDDEN", Since: since}, index: "audit_log_time"},
		{name: "everything", f: audit.Filter{Limit: 5}, index: "audit_log_time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, args := audit.QuerySQLText(audit.SQLite, tc.f)
			rs, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rs.Close()
			var plan []string
			for rs.Next() {
				var id, parent, notused int
				var detail string
				if err := rs.Scan(&id, &parent, &notused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			if err := rs.Err(); err != nil {
				t.Fatal(err)
			}
			all := strings.Join(plan, "; ")
			if !strings.Contains(all, "INDEX "+tc.index+" ") && !strings.HasSuffix(all, "INDEX "+tc.index) {
				t.Errorf("plan %q does not use %s", all, tc.index)
			}
			if strings.Contains(all, "SCAN audit_log") && !strings.Contains(all, "USING") {
				t.Errorf("plan %q scans the table", all)
			}
			if sorts := strings.Contains(all, "TEMP B-TREE"); sorts != tc.sorts {
				t.Errorf("plan %q: sorts the rows = %v, want %v", all, sorts, tc.sorts)
			}
			t.Logf("%s", all)
		})
	}
}

// TestQuerySQLRequestIDText pins the PostgreSQL query of a Filter by
// request id, whose plan TestReview15PostgresRequestIndex (in
// internal/pgtest, which cannot call QuerySQLText) checks on a server.
func TestQuerySQLRequestIDText(t *testing.T) {
	q, args := audit.QuerySQLText(audit.Postgres, audit.Filter{RequestID: "gw-1"})
	const want = `SELECT time_ns, correlation_id, session_id, subject, roles, tool, class, phase, allowed, dry_run, code, detail, latency_ms, args_sha256, cost, protocol_version, client_name, args, request_id, parent_id FROM audit_log WHERE request_id <> '' AND left(request_id, 256) = left($1, 256) AND request_id = $1 ORDER BY time_ns, id`
	if q != want || len(args) != 1 || args[0] != "gw-1" {
		t.Errorf("query %q %v,\nwant %q [gw-1]", q, args, want)
	}
}
