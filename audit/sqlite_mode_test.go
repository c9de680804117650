package audit_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestSQLiteFileMode: a new SQLite audit database and its journal are
// 0600, as a JSONL audit file is, whatever the directory's mode.
func TestSQLiteFileMode(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "audit.db")
	db, err := audit.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := audit.NewSQL(context.Background(), db, audit.SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteDurable(context.Background(), diskEvent("e", 10)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, path + "-wal"} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", filepath.Base(f), st.Mode().Perm())
		}
	}
	s.Close()
	db.Close()
}
