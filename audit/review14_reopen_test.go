package audit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestJSONLReopenRefusesWhatIsNoFile: a log rotator leaves a regular file
// at the path, or none. A named pipe there (put by anyone who can write to
// the directory) took the sink: the lines went to whoever reads it, or
// filled it and blocked every later write with nobody reading, and a
// durable write failed (a pipe cannot be fsynced), which makes the sink
// refuse every write after. A directory or a pipe at the path is refused,
// and the sink writes on to its file.
func TestJSONLReopenRefusesWhatIsNoFile(t *testing.T) {
	for _, kind := range []string{"fifo", "directory"} {
		t.Run(kind, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			s, err := audit.OpenJSONL(path, &audit.JSONLOptions{FlushInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := s.Write(ctx, diskEvent("before", 10)); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(path, path+".1"); err != nil {
				t.Fatal(err)
			}
			switch kind {
			case "fifo":
				err = mkfifo(path)
			default:
				err = os.Mkdir(path, 0o700)
			}
			if err != nil {
				t.Skipf("audit: cannot make a %s: %v", kind, err)
			}
			if err := s.Reopen(); err == nil {
				t.Errorf("Reopen onto a %s: nil, want an error", kind)
			}
			done := make(chan error, 1)
			go func() { done <- s.WriteDurable(ctx, diskEvent("after", 10)) }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("WriteDurable after Reopen onto a %s: %v, want the sink's own file still used", kind, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("WriteDurable after Reopen onto a %s: blocked", kind)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			ids, lineErrs := readDiskFile(t, path+".1")
			if len(lineErrs) > 0 || ids["before"] != 1 || ids["after"] != 1 {
				t.Errorf("the sink's file holds %v (%v), want before and after once", ids, lineErrs)
			}
		})
	}
}

// TestJSONLReopenSyncsWhatTheFullDiskTook: when the old file's disk fills
// part way through Reopen's write, the lines it took whole stay there and
// are not written again; they count as durable only once that file is
// fsynced (the page cache does not survive a crash), and Stats counts that
// fsync with the new file's.
func TestJSONLReopenSyncsWhatTheFullDiskTook(t *testing.T) {
	full, _ := smallDisk(t, "64k")
	roomy := t.TempDir()
	link := filepath.Join(t.TempDir(), "audit.jsonl")
	oldFile, newFile := filepath.Join(full, "audit.jsonl"), filepath.Join(roomy, "audit.jsonl")
	for _, f := range []string{oldFile, newFile} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(oldFile, link); err != nil {
		t.Fatal(err)
	}
	s, err := audit.OpenJSONL(link, &audit.JSONLOptions{FlushInterval: -1, BufferSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 150 {
		if err := s.Write(ctx, diskEvent(fmt.Sprintf("e%d", i), 1000)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(newFile, link); err != nil {
		t.Fatal(err)
	}
	before := s.Stats()
	if err := s.Reopen(); err != nil {
		t.Fatalf("Reopen: %v", err)
	}
	after := s.Stats()
	if got := after.Syncs - before.Syncs; got != 2 {
		t.Errorf("Reopen made %d fsyncs, want 2: the old file's (for the lines it took) and the new file's", got)
	}
	if got := after.Writes - before.Writes; got != 2 {
		t.Errorf("Reopen made %d writes, want 2 (the old file's, cut short, and the new file's)", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	inOld, _ := readDiskFile(t, oldFile)
	inNew, _ := readDiskFile(t, newFile)
	for i := range 150 {
		id := fmt.Sprintf("e%d", i)
		if n := inOld[id] + inNew[id]; n != 1 {
			t.Errorf("%s readable %d times, want once", id, n)
		}
	}
	if len(inOld) == 0 {
		t.Errorf("the full disk took no line: the old write did not fail part way")
	}
}
