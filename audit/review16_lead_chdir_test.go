package audit

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReopenRelativePathAfterChdir: a sink opened with a relative path
// reopens the file it was opened at, not one in the process's working
// directory of the moment (a server that changes directory after opening
// its trail would have its rotated records go elsewhere).
func TestReopenRelativePathAfterChdir(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	t.Chdir(dir)
	s, err := OpenJSONL("audit.jsonl", &JSONLOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := os.Chdir(other); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "audit.jsonl.1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Reopen(); err != nil {
		t.Fatal(err)
	}
	e := &Event{Time: time.Unix(1_800_000_000, 0).UTC(), CorrelationID: "after", Phase: PhaseOutcome, Tool: "t"}
	if err := s.WriteDurable(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "audit.jsonl")); err != nil {
		t.Errorf("the reopened file is not where the sink was opened: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, "audit.jsonl")); err == nil {
		t.Error("Reopen created audit.jsonl in the new working directory")
	}
}
