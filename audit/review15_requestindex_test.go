package audit_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestSQLiteUpgradeV4RequestIndex: a version 4 table (request_id without
// an index) is upgraded to version 5 in place when a sink opens it: its
// rows kept, the partial index on request_id added.
func TestSQLiteUpgradeV4RequestIndex(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	s, err := audit.NewSQL(ctx, db, audit.SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, e := range []audit.Event{
		{Time: now, CorrelationID: "a", RequestID: "gw-1", Phase: audit.PhaseOutcome},
		{Time: now.Add(time.Millisecond), CorrelationID: "b", Phase: audit.PhaseOutcome},
	} {
		if err := s.WriteDurable(ctx, &e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Version 4 as the previous build left it.
	for _, q := range []string{`DROP INDEX audit_log_request`, `DROP INDEX audit_log_parent`, `ALTER TABLE audit_log DROP COLUMN parent_id`, `DELETE FROM audit_schema_version`, `INSERT INTO audit_schema_version (version) VALUES (4)`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s = newSQLiteSink(t, db, nil)
	var v, n int
	if err := db.QueryRow(`SELECT MAX(version) FROM audit_schema_version`).Scan(&v); err != nil || v != audit.SchemaVersion || audit.SchemaVersion < 5 {
		t.Errorf("schema version %d (%v), SchemaVersion %d; want SchemaVersion, at least 5", v, err, audit.SchemaVersion)
	}
	if err := db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'audit_log_request'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("audit_log_request: %d indexes (%v), want 1", n, err)
	}
	got, err := s.Query(ctx, audit.Filter{RequestID: "gw-1"})
	if err != nil || len(got) != 1 || got[0].CorrelationID != "a" {
		t.Errorf("Filter{RequestID: gw-1} after the upgrade: %+v, %v", got, err)
	}
	if all, err := s.Query(ctx, audit.Filter{}); err != nil || len(all) != 2 {
		t.Errorf("rows after the upgrade: %d, %v; want 2", len(all), err)
	}
}
