package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestReview57AuditSQLiteNames: --audit audit.sqlite wrote JSONL (only a
// name ending in .db opened SQLite), silently: an operator reading it with
// sqlite3 found a text file. .sqlite and .sqlite3, in any letter case, open
// SQLite now, and the start's log line says which kind it opened.
func TestReview57AuditSQLiteNames(t *testing.T) {
	for name, want := range map[string]string{
		"": "none", "a.jsonl": "jsonl", "a.log": "jsonl", "audit": "jsonl",
		"a.db": "sqlite", "a.sqlite": "sqlite", "a.SQLITE3": "sqlite", "a.DB": "sqlite",
	} {
		if got := auditKind(name); got != want {
			t.Errorf("auditKind(%q) = %q, want %q", name, got, want)
		}
	}
	path := filepath.Join(t.TempDir(), "audit.sqlite")
	_, _, closeSink, err := openAudit(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := closeSink(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("SQLite format 3\x00")) {
		t.Errorf("--audit %s opened no SQLite database: %.40q", filepath.Base(path), b)
	}
}
