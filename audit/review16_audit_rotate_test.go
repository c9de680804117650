package audit_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview16CopyTruncate: logrotate's copytruncate copies the file and
// truncates it to zero while the sink keeps it open. The sink appends from
// the new end (no hole of zero bytes where the old end was), and every
// record is in the copy or in the truncated file.
func TestReview16CopyTruncate(t *testing.T) {
	for _, durable := range []bool{true, false} {
		t.Run(fmt.Sprintf("durable_%v", durable), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			s, err := audit.OpenJSONL(path, &audit.JSONLOptions{Durable: durable, FlushInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			write := func(ids ...string) {
				t.Helper()
				for _, id := range ids {
					if err := s.Write(ctx, diskEvent(id, 100)); err != nil {
						t.Fatal(err)
					}
				}
			}
			write("a1", "a2")
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			write("a3") // buffered unless durable: reaches the file after the truncation
			copyFile(t, path, path+".1")
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
			write("b1", "b2")
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.IndexByte(data, 0) >= 0 {
				t.Errorf("the truncated file holds zero bytes: the sink wrote at its old end")
			}
			old, _ := readDiskFile(t, path+".1")
			now, bad := readDiskFile(t, path)
			if len(bad) > 0 {
				t.Errorf("bad lines after copytruncate: %v", bad)
			}
			for _, id := range []string{"a1", "a2", "a3", "b1", "b2"} {
				if old[id]+now[id] != 1 {
					t.Errorf("%s: %d times in the copy, %d in the file; want once", id, old[id], now[id])
				}
			}
			for _, id := range []string{"b1", "b2"} {
				if now[id] != 1 {
					t.Errorf("%s, written after the truncation, is not in the file", id)
				}
			}
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReview16FileDeletedOrReplaced: the sink's file is deleted (rm, or
// the last of a rotator's renamed files removed before anyone called
// Reopen) or replaced (a file renamed over its path). Records the sink
// acknowledges afterwards, durable ones included, must not go to a file
// that no longer has a name, and vanish with it when the process ends:
// they are in the file at the path. Before the fix they were all lost,
// and WriteDurable said they were on stable storage.
func TestReview16FileDeletedOrReplaced(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("audit: an open file cannot be removed on Windows")
	}
	for _, how := range []string{"deleted", "replaced"} {
		for _, durable := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s_durable_%v", how, durable), func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "audit.jsonl")
				s, err := audit.OpenJSONL(path, &audit.JSONLOptions{Durable: durable, FlushInterval: -1})
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				if err := s.WriteDurable(ctx, diskEvent("a1", 10)); err != nil {
					t.Fatal(err)
				}
				if err := s.Write(ctx, diskEvent("a2", 10)); err != nil {
					t.Fatal(err)
				}
				switch how {
				case "deleted":
					if err := os.Remove(path); err != nil {
						t.Fatal(err)
					}
				case "replaced":
					if err := os.WriteFile(filepath.Join(dir, "new"), nil, 0o600); err != nil {
						t.Fatal(err)
					}
					if err := os.Rename(filepath.Join(dir, "new"), path); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.WriteDurable(ctx, diskEvent("b1", 10)); err != nil {
					t.Fatalf("WriteDurable after the file was %s: %v", how, err)
				}
				ids, _ := readDiskFileIfAny(t, path)
				if ids["b1"] != 1 {
					t.Errorf("WriteDurable returned nil, but its record is %d times in the file at the path (%v): it went to a file with no name", ids["b1"], ids)
				}
				if err := s.Write(ctx, diskEvent("b2", 10)); err != nil {
					t.Fatal(err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				ids, bad := readDiskFileIfAny(t, path)
				if len(bad) > 0 {
					t.Errorf("bad lines: %v", bad)
				}
				for _, id := range []string{"b1", "b2"} {
					if ids[id] != 1 {
						t.Errorf("%s, acknowledged after the file was %s: %d times in the file at the path, want once (%v)", id, how, ids[id], ids)
					}
				}
				st, err := os.Stat(path)
				if err == nil && how == "deleted" && st.Mode().Perm() != 0o600 {
					t.Errorf("the file made again has mode %v, want 0600", st.Mode().Perm())
				}
			})
		}
	}
}

// readDiskFileIfAny is readDiskFile, with no records for a missing file.
func readDiskFileIfAny(t *testing.T, path string) (map[string]int, []error) {
	t.Helper()
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return map[string]int{}, nil
	}
	return readDiskFile(t, path)
}

// TestReview16DirectoryRemoved: the sink's directory is removed with its
// file, so no file can be made at the path again. A WriteDurable must not
// say its record is on stable storage (it went to a file with no name):
// it is refused, and so is every write after it, and Close reports it.
func TestReview16DirectoryRemoved(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("audit: an open file cannot be removed on Windows")
	}
	dir := filepath.Join(t.TempDir(), "logs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := audit.OpenJSONL(filepath.Join(dir, "audit.jsonl"), &audit.JSONLOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.WriteDurable(ctx, diskEvent("a1", 10)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteDurable(ctx, diskEvent("b1", 10)); err == nil {
		t.Fatal("WriteDurable after the directory was removed returned nil: its record is in no file")
	} else {
		t.Logf("WriteDurable: %v", err)
	}
	if err := s.Write(ctx, diskEvent("b2", 10)); err == nil {
		t.Error("Write after a refused WriteDurable returned nil")
	}
	if err := s.Close(); err == nil {
		t.Error("Close returned nil")
	}
}

// TestReview16TruncatedUnderLoad: copytruncate's truncation lands at any
// moment of the sink's writes (here: every few hundred microseconds, while
// durable and buffered writers write). No write fails for it, the file
// never holds zero bytes or a torn line, and what the file holds at the
// end reads back.
func TestReview16TruncatedUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for a second")
	}
	for _, durable := range []bool{true, false} {
		t.Run(fmt.Sprintf("durable_%v", durable), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			s, err := audit.OpenJSONL(path, &audit.JSONLOptions{Durable: durable, BufferSize: 4 << 10, FlushInterval: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := os.Truncate(path, 0); err != nil {
						t.Error(err)
						return
					}
					time.Sleep(200 * time.Microsecond)
				}
			})
			deadline := time.Now().Add(time.Second)
			for w := range 4 {
				wg.Go(func() {
					ctx := context.Background()
					for i := 0; time.Now().Before(deadline); i++ {
						e := diskEvent(fmt.Sprintf("w%d-%d", w, i), 200)
						var err error
						if i%8 == 0 {
							err = s.WriteDurable(ctx, e)
						} else {
							err = s.Write(ctx, e)
						}
						if err != nil {
							t.Errorf("write %s while the file is truncated: %v", e.CorrelationID, err)
							return
						}
					}
				})
			}
			time.Sleep(time.Until(deadline))
			close(stop)
			wg.Wait()
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.IndexByte(data, 0) >= 0 {
				t.Errorf("the file holds zero bytes")
			}
			if _, bad := readDiskFile(t, path); len(bad) > 0 {
				t.Errorf("bad lines: %v", bad[:min(len(bad), 3)])
			}
		})
	}
}
