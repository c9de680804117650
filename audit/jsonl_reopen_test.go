package audit_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestJSONLReopenAfterRename: lines buffered before a rotation land in the
// renamed file, lines written after Reopen in the new file at the path.
func TestJSONLReopenAfterRename(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := audit.OpenJSONL(path, &audit.JSONLOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []string{"a1", "a2"} {
		if err := s.Write(ctx, diskEvent(id, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Reopen(); err != nil {
		t.Fatalf("Reopen after a rename: %v", err)
	}
	if err := s.Write(ctx, diskEvent("b1", 10)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string][]string{path + ".1": {"a1", "a2"}, path: {"b1"}} {
		ids, lineErrs := readDiskFile(t, file)
		if len(lineErrs) > 0 {
			t.Errorf("%s: %v", file, lineErrs)
		}
		if len(ids) != len(want) {
			t.Errorf("%s holds %v, want %v", file, ids, want)
		}
		for _, id := range want {
			if ids[id] != 1 {
				t.Errorf("%s holds %s %d times, want once (%v)", file, id, ids[id], ids)
			}
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("the reopened file's mode is %v, want the sink's 0600", st.Mode().Perm())
	}
}

// TestJSONLReopenUnderLoad rotates the file five times while eight writers
// write: every acknowledged event is in exactly one of the files, and no
// line is torn.
func TestJSONLReopenUnderLoad(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("durable_%v", durable), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "audit.jsonl")
			s, err := audit.OpenJSONL(path, &audit.JSONLOptions{Durable: durable, FlushInterval: time.Millisecond, BufferSize: 4 << 10})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var mu sync.Mutex
			acked := map[string]bool{}
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for w := range 8 {
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						id := fmt.Sprintf("w%d-%d", w, i)
						var err error
						switch i % 3 {
						case 0:
							err = s.Write(ctx, diskEvent(id, 50))
						case 1:
							err = s.WriteDurable(ctx, diskEvent(id, 50))
						default:
							err = s.Keep(ctx, diskEvent(id, 50), nil)
						}
						if err != nil {
							t.Errorf("write %s: %v", id, err)
							return
						}
						mu.Lock()
						acked[id] = true
						mu.Unlock()
					}
				})
			}
			files := []string{path}
			for k := 1; k <= 5; k++ {
				time.Sleep(20 * time.Millisecond)
				rotated := fmt.Sprintf("%s.%d", path, k)
				if err := os.Rename(path, rotated); err != nil {
					t.Fatal(err)
				}
				if err := s.Reopen(); err != nil {
					t.Fatalf("Reopen %d: %v", k, err)
				}
				files = append(files, rotated)
			}
			time.Sleep(20 * time.Millisecond)
			close(stop)
			wg.Wait()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			perFile := map[string]int{}
			for _, f := range files {
				ids, lineErrs := readDiskFile(t, f)
				if len(lineErrs) > 0 {
					t.Errorf("%s: %v", f, lineErrs)
				}
				for id, n := range ids {
					seen[id] += n
					perFile[f] += n
				}
			}
			if len(acked) < 100 {
				t.Fatalf("only %d events written: the test did not load the sink", len(acked))
			}
			for id := range acked {
				if seen[id] != 1 {
					t.Errorf("acknowledged %s is in the files %d times, want once", id, seen[id])
				}
			}
			for _, f := range files[1:] {
				if perFile[f] == 0 {
					t.Errorf("%s is empty: the rotation did not split the stream", f)
				}
			}
			t.Logf("%d events over %d files", len(acked), len(files))
		})
	}
}

// TestJSONLReopenCannotOpen: when the path cannot be opened any more, Reopen
// says so and the sink writes on to the file it has.
func TestJSONLReopenCannotOpen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "logs", "audit.jsonl")
	if err := os.Mkdir(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := audit.OpenJSONL(path, &audit.JSONLOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Write(ctx, diskEvent("before", 10)); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(dir, "logs.old")
	if err := os.Rename(filepath.Dir(path), moved); err != nil {
		t.Fatal(err)
	}
	if err := s.Reopen(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Reopen with the directory gone: %v, want an error wrapping fs.ErrNotExist", err)
	}
	if err := s.WriteDurable(ctx, diskEvent("after", 10)); err != nil {
		t.Fatalf("WriteDurable after a failed Reopen: %v, want the old file still used", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ids, lineErrs := readDiskFile(t, filepath.Join(moved, "audit.jsonl"))
	if len(lineErrs) > 0 || ids["before"] != 1 || ids["after"] != 1 {
		t.Errorf("the old file holds %v (%v), want before and after once", ids, lineErrs)
	}
	if err := s.Reopen(); !errors.Is(err, audit.ErrClosed) {
		t.Errorf("Reopen after Close: %v, want ErrClosed", err)
	}
}

// TestJSONLReopenCarriesLinesTheOldFileRefused: the old file is on a full
// disk, the path now leads elsewhere (a symbolic link, repointed): the lines
// the old file could not take are written to the new one, each readable
// exactly once across both, and waiting durable writers are answered.
func TestJSONLReopenCarriesLinesTheOldFileRefused(t *testing.T) {
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
	var ids []string
	for i := range 150 { // about 150 KiB, buffered: more than the 64 KiB disk
		id := fmt.Sprintf("e%d", i)
		if err := s.Write(ctx, diskEvent(id, 1000)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(newFile, link); err != nil {
		t.Fatal(err)
	}
	if err := s.Reopen(); err != nil {
		t.Fatalf("Reopen onto a disk with room: %v, want nil (nothing lost)", err)
	}
	if err := s.WriteDurable(ctx, diskEvent("last", 10)); err != nil {
		t.Fatalf("WriteDurable after Reopen: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	inOld, oldErrs := readDiskFile(t, oldFile)
	inNew, newErrs := readDiskFile(t, newFile)
	if len(inOld) == 0 {
		t.Errorf("the full disk took no line: the old write did not fail part way")
	}
	for _, err := range oldErrs {
		if !errors.Is(err, audit.ErrTornLine) {
			t.Errorf("old file: %v, want at most a torn last line", err)
		}
	}
	if len(newErrs) > 0 {
		t.Errorf("new file: %v", newErrs)
	}
	for _, id := range append(ids, "last") {
		if n := inOld[id] + inNew[id]; n != 1 {
			t.Errorf("%s is readable %d times across both files (old %d, new %d), want once", id, n, inOld[id], inNew[id])
		}
	}
	t.Logf("old file %d lines, new file %d", len(inOld), len(inNew))
}
