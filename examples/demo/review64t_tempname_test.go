package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReview64tTempTrailNamesNoMissingFile: without -audit, the demo
// printed "Audit trail (15 records in audit.db, table audit_log)", the
// base name of its temporary database, removed at exit: the user who
// opens audit.db with the sqlite3 shell, as the line invites, finds no
// such file (and the shell makes an empty one). The heading of a
// temporary trail must say that it is temporary and name no file.
func TestReview64tTempTrailNamesNoMissingFile(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	t.Chdir(t.TempDir())
	var out, stderr strings.Builder
	if code := demo(nil, &out, &stderr); code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, stderr.String())
	}
	head := trailHead(t, out.String())
	if _, err := os.Stat("audit.db"); err == nil {
		t.Fatal("the demo left audit.db in the working directory")
	}
	if strings.Contains(head, "audit.db") || !strings.Contains(head, "temporary") {
		t.Errorf("heading %q names a file that is gone at exit; want it to say the database is temporary", head)
	}
	// A kept database is named, as before.
	path := filepath.Join(t.TempDir(), "kept.db")
	out.Reset()
	if code := demo([]string{"-audit", path}, &out, &stderr); code != 0 {
		t.Fatalf("-audit: exit status %d; stderr:\n%s", code, stderr.String())
	}
	if head := trailHead(t, out.String()); !strings.Contains(head, "records in kept.db, table audit_log") {
		t.Errorf("-audit: heading %q, want it to name kept.db", head)
	}
}
