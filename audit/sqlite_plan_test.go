package audit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestSQLiteQueryPlans: a Filter by session, subject, tool, correlation id
// or time range searches an index of audit_log (EXPLAIN QUERY PLAN); one
// by outcome alone (or none) reads the time index in order, stopping at
// Limit, never the table in rowid order; and the order (time_ns, id) needs
// no sort of the rows found but for a correlation id (a handful of rows).
func TestSQLiteQueryPlans(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	s := newSQLiteSink(t, db, nil)
	for i, e := range floodEvents("p", 2000) {
		e.Allowed = i%10 != 0
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
