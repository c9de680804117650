package audit_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview53LineCutBeforeItsNewline: a line cut just before its newline
// (the disk filled there) holds a whole record. Before the file is
// reopened it is a torn line, never read as a record; once OpenJSONL has
// ended it, it reads back as one, as OpenJSONL's doc says, and the
// reopened sink's own records follow it. TestJSONLFullDisk met this on
// one run in several hundred.
func TestReview53LineCutBeforeItsNewline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	first, _ := event("first", 1).AppendJSON(nil)
	cut, _ := event("cut", 2).AppendJSON(nil)
	if err := os.WriteFile(path, append(append(first, '\n'), cut...), 0o600); err != nil {
		t.Fatal(err)
	}
	evs, lineErrs := readAll(t, path)
	if len(evs) != 1 || evs[0].CorrelationID != "first" || len(lineErrs) != 1 {
		t.Fatalf("before reopening: events %v, line errors %v; want first and the torn line", evs, lineErrs)
	}
	s, err := audit.OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), event("after", 3)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	evs, lineErrs = readAll(t, path)
	var got []string
	for _, e := range evs {
		got = append(got, e.CorrelationID)
	}
	if len(got) != 3 || got[0] != "first" || got[1] != "cut" || got[2] != "after" || len(lineErrs) != 0 {
		t.Errorf("after reopening: events %v, line errors %v; want first, cut, after and none", got, lineErrs)
	}
}
