package audit_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// A NewSQL whose ctx ends while its migration sets its connection's busy
// timeout to 0 must not put that connection back in the pool so: the
// driver (modernc) reports a ctx that ended during a statement as the
// statement's error even when the statement ran, and the restore was
// deferred only after a success.
func TestReview56xBusyTimeoutRestored(t *testing.T) {
	db, err := audit.OpenSQLite(filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: the one the migration pinned
	for i := range 2000 {
		ctx, cancel := context.WithCancel(context.Background())
		d := time.Duration(rand.IntN(300)) * time.Microsecond
		timer := time.AfterFunc(d, cancel)
		s, err := audit.NewSQL(ctx, db, audit.SQLite, nil)
		timer.Stop()
		cancel()
		if err == nil {
			s.Close()
		}
		var busy int
		if err := db.QueryRow(`PRAGMA busy_timeout`).Scan(&busy); err != nil {
			t.Fatal(err)
		}
		if busy != 10000 {
			t.Fatalf("try %d (ctx cancelled after %v; NewSQL: %v): the pooled connection's busy_timeout is %d, want 10000",
				i, d, err, busy)
		}
	}
}
