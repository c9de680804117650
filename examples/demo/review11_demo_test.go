package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReview11KeptAuditShowsOnlyThisRun: with -audit PATH the database is
// kept, and a second run appends to it; the "Audit trail" the demo prints
// is still this run's, not every run's so far.
func TestReview11KeptAuditShowsOnlyThisRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	var first, second strings.Builder
	if err := run(path, &first); err != nil {
		t.Fatal(err)
	}
	if err := run(path, &second); err != nil {
		t.Fatal(err)
	}
	head := func(s string) string {
		i := strings.Index(s, "Audit trail (")
		if i < 0 {
			t.Fatalf("no audit trail in the output:\n%s", s)
		}
		line, _, _ := strings.Cut(s[i:], "\n")
		return line
	}
	if a, b := head(first.String()), head(second.String()); a != b {
		t.Errorf("second run over the same database: %q, want %q (this run's records only)", b, a)
	}
	if n, want := strings.Count(second.String(), "\n  outcome ")+strings.Count(second.String(), "\n  intent "), strings.Count(first.String(), "\n  outcome ")+strings.Count(first.String(), "\n  intent "); n != want {
		t.Errorf("second run lists %d records, want %d", n, want)
	}
}
