package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// r31Event is an outcome record of a call made by the handler of the call
// parent ("" for a call of its own).
func r31Event(corr, parent string, at time.Time) audit.Event {
	return audit.Event{Time: at, CorrelationID: corr, ParentID: parent, RequestID: "gw-1", SessionID: "s",
		Tool: "trigger_refund", Class: "write", Phase: audit.PhaseOutcome, Allowed: true, LatencyMS: 0.5}
}

// TestReview31ParentEncoding: a record without a parent encodes exactly
// as before parent_id existed (the bytes are pinned); one with a parent
// has parent_id after correlation_id, as encoding/json writes the struct,
// and its slog group has the attribute.
func TestReview31ParentEncoding(t *testing.T) {
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	top := r31Event("c-top", "", at)
	got, err := top.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	const before = `{"time":"2026-12-03T12:00:00Z","correlation_id":"c-top","request_id":"gw-1","session_id":"s","tool":"trigger_refund","class":"write","phase":"outcome","allowed":true,"dry_run":false,"latency_ms":0.5}`
	if string(got) != before {
		t.Errorf("record without a parent:\n got %s\nwant %s", got, before)
	}
	inner := r31Event("c-inner", "c-top", at)
	got, err = inner.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"time":"2026-12-03T12:00:00Z","correlation_id":"c-inner","parent_id":"c-top","request_id":"gw-1","session_id":"s","tool":"trigger_refund","class":"write","phase":"outcome","allowed":true,"dry_run":false,"latency_ms":0.5}`
	if string(got) != want {
		t.Errorf("record with a parent:\n got %s\nwant %s", got, want)
	}
	type plain audit.Event // encoding/json by reflection
	viaJSON, err := json.Marshal(plain(inner))
	if err != nil || string(viaJSON) != want {
		t.Errorf("encoding/json: %s, %v; want %s", viaJSON, err, want)
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("audit", "event", &inner)
	if !strings.Contains(buf.String(), `"parent_id":"c-top"`) {
		t.Errorf("slog: %s, want a parent_id attribute", buf.String())
	}
}

// TestReview31ParentJSONL: a JSONL sink keeps the parent, ReadJSONL and
// QueryJSONL read it back, and Filter.ParentID selects the inner calls.
func TestReview31ParentJSONL(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := audit.OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for i, e := range []audit.Event{r31Event("c-top", "", at), r31Event("c-in1", "c-top", at.Add(time.Millisecond)), r31Event("c-in2", "c-in1", at.Add(2*time.Millisecond))} {
		if i == 1 {
			// Through Keep too, which encodes later, in a batch.
			if err := s.Keep(ctx, &e, json.RawMessage(`{"a":1}`)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := s.Write(ctx, &e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	all, err := audit.QueryJSONL(path, audit.Filter{})
	if err != nil || len(all) != 3 {
		t.Fatalf("QueryJSONL: %d events, %v", len(all), err)
	}
	for i, want := range []string{"", "c-top", "c-in1"} {
		if all[i].ParentID != want {
			t.Errorf("record %s: parent %q, want %q", all[i].CorrelationID, all[i].ParentID, want)
		}
	}
	got, err := audit.QueryJSONL(path, audit.Filter{ParentID: "c-top"})
	if err != nil || len(got) != 1 || got[0].CorrelationID != "c-in1" {
		t.Errorf("Filter{ParentID: c-top}: %+v, %v; want c-in1 only (the direct inner call)", got, err)
	}
}

// TestReview31ParentSQLite: a SQLite sink stores the parent (through the
// native writer and WriteDurable), its Query and QuerySQL read it back,
// and Filter.ParentID selects through the partial index of version 6.
func TestReview31ParentSQLite(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	s := newSQLiteSink(t, db, nil)
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	top, in1, in2 := r31Event("c-top", "", at), r31Event("c-in1", "c-top", at.Add(time.Millisecond)), r31Event("c-in2", "c-top", at.Add(2*time.Millisecond))
	in2.Phase = audit.PhaseIntent
	if err := s.Write(ctx, &top); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteDurable(ctx, &in2); err != nil {
		t.Fatal(err)
	}
	if err := s.Keep(ctx, &in1, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for name, query := range map[string]func(audit.Filter) ([]audit.Event, error){
		"Query":    func(f audit.Filter) ([]audit.Event, error) { return s.Query(ctx, f) },
		"QuerySQL": func(f audit.Filter) ([]audit.Event, error) { return audit.QuerySQL(ctx, db, audit.SQLite, f) },
	} {
		all, err := query(audit.Filter{})
		if err != nil || len(all) != 3 {
			t.Fatalf("%s: %d events, %v", name, len(all), err)
		}
		for i, want := range []string{"", "c-top", "c-top"} {
			if all[i].ParentID != want {
				t.Errorf("%s: record %s: parent %q, want %q", name, all[i].CorrelationID, all[i].ParentID, want)
			}
		}
		got, err := query(audit.Filter{ParentID: "c-top"})
		if err != nil || len(got) != 2 || got[0].CorrelationID != "c-in1" || got[1].CorrelationID != "c-in2" {
			t.Errorf("%s: Filter{ParentID: c-top}: %+v, %v; want c-in1, c-in2", name, got, err)
		}
	}
	q, args := audit.QuerySQLText(audit.SQLite, audit.Filter{ParentID: "c-top", SessionID: "s"})
	var plan []string
	rs, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for rs.Next() {
		var id, parent, notused int
		var detail string
		if err := rs.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if all := strings.Join(plan, "; "); !strings.Contains(all, "INDEX audit_log_parent") {
		t.Errorf("plan of Filter{ParentID, SessionID}: %q, want the index audit_log_parent", all)
	}
	const wantPG = `SELECT time_ns, correlation_id, session_id, subject, roles, tool, class, phase, allowed, dry_run, code, detail, latency_ms, args_sha256, cost, protocol_version, client_name, args, request_id, parent_id FROM audit_log WHERE parent_id <> '' AND left(parent_id, 256) = left($1, 256) AND parent_id = $1 ORDER BY time_ns, id`
	if q, args := audit.QuerySQLText(audit.Postgres, audit.Filter{ParentID: "c-top"}); q != wantPG || len(args) != 1 || args[0] != "c-top" {
		t.Errorf("PostgreSQL query %q %v,\nwant %q [c-top]", q, args, wantPG)
	}
}

// TestReview31ParentSQLiteUpgradeV5: a version 5 table with rows, as the
// previous build left it (no parent_id), is read by QuerySQL as it is (no
// parents; Filter.ParentID matches nothing), then upgraded in place by a
// sink: its rows kept, without a parent, parent_id and its index added,
// and new rows carry theirs.
func TestReview31ParentSQLiteUpgradeV5(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	s := newSQLiteSink(t, db, nil)
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, e := range []audit.Event{r31Event("old-1", "", at), r31Event("old-2", "", at.Add(time.Millisecond))} {
		if err := s.WriteDurable(ctx, &e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Version 5 as the previous build left it.
	for _, q := range []string{`DROP INDEX audit_log_parent`, `ALTER TABLE audit_log DROP COLUMN parent_id`,
		`DELETE FROM audit_schema_version`, `INSERT INTO audit_schema_version (version) VALUES (5)`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	old, err := audit.QuerySQL(ctx, db, audit.SQLite, audit.Filter{RequestID: "gw-1"})
	if err != nil || len(old) != 2 || old[0].ParentID != "" {
		t.Fatalf("QuerySQL of a version 5 table: %+v, %v", old, err)
	}
	if got, err := audit.QuerySQL(ctx, db, audit.SQLite, audit.Filter{ParentID: "old-1"}); err != nil || len(got) != 0 {
		t.Errorf("Filter{ParentID} of a version 5 table: %+v, %v; want none", got, err)
	}
	s = newSQLiteSink(t, db, nil)
	var v, n int
	if err := db.QueryRow(`SELECT MAX(version) FROM audit_schema_version`).Scan(&v); err != nil || v != audit.SchemaVersion || v < 6 {
		t.Errorf("schema version %d (%v), want %d (at least 6)", v, err, audit.SchemaVersion)
	}
	if err := db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'audit_log_parent'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("audit_log_parent: %d indexes (%v), want 1", n, err)
	}
	in := r31Event("new-1", "old-1", at.Add(2*time.Millisecond))
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
	if got, err := s.Query(ctx, audit.Filter{ParentID: "old-1"}); err != nil || len(got) != 1 || got[0].CorrelationID != "new-1" {
		t.Errorf("Filter{ParentID: old-1} after the upgrade: %+v, %v", got, err)
	}
}
