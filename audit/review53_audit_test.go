package audit_test

import (
	"context"
	"errors"
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

// TestReview53DanglingLinkRefused: OpenJSONL of a path that is a symbolic
// link to no file fails with ENOENT (after its tries, quickly) rather
// than create the file the link names.
func TestReview53DanglingLinkRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	if err := os.Symlink(filepath.Join(dir, "missing.jsonl"), path); err != nil {
		t.Skipf("cannot make a symbolic link here: %v", err)
	}
	s, err := audit.OpenJSONL(path, nil)
	if err == nil {
		s.Close()
		t.Fatal("OpenJSONL of a dangling link = nil error")
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenJSONL of a dangling link: %v, want ENOENT", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link's target was created: %v", err)
	}
}
