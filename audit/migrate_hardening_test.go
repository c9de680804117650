package audit_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestMigrateCantOpenFailsFast: a database that cannot be opened at all (its
// directory does not exist) is no failure of the moment: NewSQL reports it
// at once instead of retrying.
func TestMigrateCantOpenFailsFast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing-dir", "audit.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	s, err := audit.NewSQL(ctx, db, audit.SQLite, nil)
	if err == nil {
		s.Close()
		t.Fatal("NewSQL on a database in a missing directory succeeded")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("NewSQL took %v to report %v: a database that cannot be opened is retried as if busy", d, err)
	}
}
