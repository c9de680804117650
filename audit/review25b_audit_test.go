//go:build unix

package audit_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/hangup"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestReview25bReopenAfterRemove: the rotator renames the file and removes
// it (or an operator removes it) before it signals the sink. Reopen wrote
// the buffered lines to the old file, which has no name left, fsynced it
// and passed them for durable: they went with the nameless file, as did
// the records of a WriteDurable waiting on Reopen. A flush moves such lines
// to the file at the path (see JSONLSink); Reopen must not lose them.
func TestReview25bReopenAfterRemove(t *testing.T) {
	for _, how := range []string{"removed", "renamed-removed"} {
		t.Run(how, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			s, err := audit.OpenJSONL(path, &audit.JSONLOptions{FlushInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := s.Write(ctx, diskEvent("flushed", 10)); err != nil {
				t.Fatal(err)
			}
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := s.Write(ctx, diskEvent("buffered", 10)); err != nil {
				t.Fatal(err)
			}
			if how == "renamed-removed" {
				if err := os.Rename(path, path+".1"); err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(path + ".1"); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := s.Reopen(); err != nil {
				t.Fatalf("Reopen: %v", err)
			}
			if err := s.WriteDurable(ctx, diskEvent("after", 10)); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			ids, bad := readDiskFile(t, path)
			if len(bad) > 0 || ids["buffered"] != 1 || ids["after"] != 1 {
				t.Errorf("the file at the path holds %v (%v), want buffered and after once", ids, bad)
			}
		})
	}
}

// TestReview25bReopenAfterDirectoryRemoved: the file was removed with its
// directory, so Reopen can make no new one: the buffered record, which
// went only to the nameless file, must not pass for durable.
func TestReview25bReopenAfterDirectoryRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "audit.jsonl")
	s, err := audit.OpenJSONL(path, &audit.JSONLOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Write(ctx, diskEvent("buffered", 10)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	rerr := s.Reopen()
	serr := s.Sync()
	if rerr == nil || serr == nil {
		t.Errorf("Reopen: %v, then Sync: %v; want errors: the record is in a file with no name", rerr, serr)
	}
	if err := s.Write(ctx, diskEvent("later", 10)); err == nil {
		t.Error("Write after the lost record: nil, want the sink's error")
	}
	s.Close()
}

// TestReview25bSIGHUPStorm: a rotator renames the file and sends SIGHUP
// (through internal/hangup, as the examples do) over and over, and also
// sends SIGHUP with nothing renamed, while writers Write, Keep and
// WriteDurable and others Flush and Sync; Close comes in the middle of
// the storm. Every Reopen before Close returns nil, every call answers nil
// or ErrClosed, and every accepted event is in exactly one of the files,
// whole.
func TestReview25bSIGHUPStorm(t *testing.T) {
	for round := range 6 {
		durable := round%2 == 1
		t.Run(fmt.Sprintf("round%d_durable_%v", round, durable), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "audit.jsonl")
			s, err := audit.OpenJSONL(path, &audit.JSONLOptions{Durable: durable, FlushInterval: time.Millisecond, BufferSize: 2 << 10})
			if err != nil {
				t.Fatal(err)
			}
			var reopenErrs atomic.Int64
			var reopens countingReopener
			reopens.s = s
			reopens.closed = &atomic.Bool{}
			reopens.bad = &reopenErrs
			stopHUP := hangup.Reopen(slog.New(slog.NewTextHandler(io.Discard, nil)), "storm", &reopens)
			defer stopHUP()

			ctx := context.Background()
			var mu sync.Mutex
			acked := map[string]bool{}
			var wg sync.WaitGroup
			for w := range 6 {
				wg.Go(func() {
					for i := 0; ; i++ {
						id := fmt.Sprintf("w%d-%d", w, i)
						var err error
						switch i % 3 {
						case 0:
							err = s.Write(ctx, diskEvent(id, 40+i%200))
						case 1:
							err = s.WriteDurable(ctx, diskEvent(id, 40))
						default:
							err = s.Keep(ctx, diskEvent(id, 40), []byte(`{"a":1}`))
						}
						if errors.Is(err, audit.ErrClosed) {
							return
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
			wg.Go(func() {
				for i := 0; ; i++ {
					var err error
					if i%2 == 0 {
						err = s.Flush()
					} else {
						err = s.Sync()
					}
					if errors.Is(err, audit.ErrClosed) {
						return
					}
					if err != nil {
						t.Errorf("Flush/Sync: %v", err)
						return
					}
				}
			})
			var files []string
			rotStop := make(chan struct{})
			var rot sync.WaitGroup
			rot.Go(func() {
				for k := 1; ; k++ {
					select {
					case <-rotStop:
						return
					default:
					}
					if k%3 != 0 {
						rotated := fmt.Sprintf("%s.%d", path, k)
						if err := os.Rename(path, rotated); err == nil {
							files = append(files, rotated)
						} else if !os.IsNotExist(err) {
							t.Errorf("rename: %v", err)
						}
					}
					syscall.Kill(os.Getpid(), syscall.SIGHUP)
					time.Sleep(time.Duration(k%4) * 500 * time.Microsecond)
				}
			})
			// The storm runs at least 150 ms, and on a busy machine until it
			// has loaded the sink (checked below), up to 30 s.
			stormEnd, stormCap := time.Now().Add(150*time.Millisecond), time.Now().Add(30*time.Second)
			for now := time.Now(); now.Before(stormCap); now = time.Now() {
				mu.Lock()
				loaded := len(acked) >= 100 && reopens.n.Load() >= 10
				mu.Unlock()
				if loaded && !now.Before(stormEnd) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			reopens.closed.Store(true)
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			time.Sleep(10 * time.Millisecond) // Reopens after Close
			close(rotStop)
			rot.Wait()
			wg.Wait()
			stopHUP()
			if n := reopenErrs.Load(); n > 0 {
				t.Errorf("%d Reopen calls failed", n)
			}
			files = append(files, path)
			seen := map[string]int{}
			for _, f := range files {
				ids, bad := readDiskFileIfAny(t, f)
				if len(bad) > 0 {
					t.Errorf("%s: %v", f, bad)
				}
				for id, n := range ids {
					seen[id] += n
				}
			}
			if len(acked) < 100 || reopens.n.Load() < 10 {
				t.Fatalf("%d events, %d Reopen calls: the test did not load the sink", len(acked), reopens.n.Load())
			}
			for id := range acked {
				if seen[id] != 1 {
					t.Errorf("accepted %s is in the files %d times, want once", id, seen[id])
				}
			}
			for id, n := range seen {
				if n != 1 {
					t.Errorf("%s is in the files %d times", id, n)
				}
			}
			t.Logf("%d events over %d files, %d Reopen calls", len(acked), len(files), reopens.n.Load())
		})
	}
}

// countingReopener counts the Reopen calls on s and the ones that failed
// other than with ErrClosed once closed is set (before Close is called).
type countingReopener struct {
	s      *audit.JSONLSink
	n      atomic.Int64
	closed *atomic.Bool
	bad    *atomic.Int64
}

func (r *countingReopener) Reopen() error {
	err := r.s.Reopen()
	r.n.Add(1)
	if err != nil && !(r.closed.Load() && errors.Is(err, audit.ErrClosed)) {
		r.bad.Add(1)
		fmt.Fprintln(os.Stderr, "Reopen:", err)
	}
	return err
}

// TestReview25bPipe: a sink opened on a named pipe (or a terminal, or
// /dev/null: what cannot be fsynced). Reopen wrote the buffered line to
// the pipe, took the pipe's failed fsync (EINVAL) for a lost line, wrote it
// again to the pipe it opened at the path, failed that fsync too and made
// the sink refuse every write: one SIGHUP, a record twice and a dead
// sink. Sync and Close failed the same way. What cannot be fsynced holds
// nothing to lose: each line reaches the reader once and no call fails.
func TestReview25bPipe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.pipe")
	if err := mkfifo(path); err != nil {
		t.Skipf("cannot make a named pipe: %v", err)
	}
	r, err := os.OpenFile(path, os.O_RDWR, 0) // a reader, so that opening for writing does not block
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	s, err := audit.OpenJSONL(path, &audit.JSONLOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	step := func(name string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	step("Write", s.Write(ctx, diskEvent("one", 10)))
	step("Reopen", s.Reopen())
	step("Write", s.Write(ctx, diskEvent("two", 10)))
	step("Sync", s.Sync())
	step("WriteDurable", s.WriteDurable(ctx, diskEvent("three", 10)))
	step("Write", s.Write(ctx, diskEvent("four", 10)))
	step("Close", s.Close())
	got := map[string]int{}
	timeout := time.After(3 * time.Second)
	for len(got) < 4 {
		select {
		case line := <-lines:
			for e, err := range audit.ReadJSONL(strings.NewReader(line + "\n")) {
				if err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
				got[e.CorrelationID]++
			}
		case <-timeout:
			t.Fatalf("the reader got %v", got)
		}
	}
	// Anything still on its way in the pipe.
	for {
		select {
		case line := <-lines:
			t.Errorf("an extra line: %s", line)
			continue
		case <-time.After(50 * time.Millisecond):
		}
		break
	}
	for _, id := range []string{"one", "two", "three", "four"} {
		if got[id] != 1 {
			t.Errorf("the reader got %s %d times, want once (%v)", id, got[id], got)
		}
	}
}

const review25bFsync = "MCPGUARD_AUDIT_REVIEW25B_FSYNC"

// TestReview25bFsyncChild is the child of TestReview25bReopenTracksWritten,
// run under strace, which fails every fsync of the file at path+".x": it
// leaves the sink in the state the scenario names, renames the file to
// path+".x", calls Reopen and then Sync, and prints what each returned.
func TestReview25bFsyncChild(t *testing.T) {
	path := os.Getenv(review25bFsync)
	if path == "" {
		return // only meaningful as a child of TestReview25bReopenTracksWritten
	}
	s, err := audit.OpenJSONL(path, &audit.JSONLOptions{FlushInterval: -1})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	must := func(err error) {
		if err != nil {
			fmt.Println("setup:", err)
			os.Exit(2)
		}
	}
	must(s.Write(ctx, event("first", 1)))
	switch os.Getenv(review25bFsync + "_SCENARIO") {
	case "synced":
		must(s.Sync())
	case "durable":
		must(s.WriteDurable(ctx, event("durable", 2)))
	case "reopened": // flushed, then moved to a new file by a Reopen
		must(s.Flush())
		must(os.Rename(path, path+".1"))
		must(s.Reopen())
	case "flushed":
		must(s.Flush())
	case "followed": // flushed, then followed to a new file at the path
		must(s.Flush())
		must(os.Rename(path, path+".1"))
		must(os.Remove(path + ".1"))
		must(s.Write(ctx, event("moved", 2)))
		must(s.Flush())
	}
	must(os.Rename(path, path+".x"))
	fmt.Println("reopen:", s.Reopen())
	fmt.Println("sync:", s.Sync())
	os.Exit(0)
}

// TestReview25bReopenTracksWritten: Reopen refuses the sink when the old
// file's fsync fails with lines written to it but not fsynced, and only
// then. After a Sync, a durable write, or a Reopen that made everything
// durable, a failing fsync of the old file loses nothing: Reopen and Sync
// return nil. After a flush without fsync (to the file, or to the file a
// removed one was followed to), both fail. The fsync failure is injected
// with strace.
func TestReview25bReopenTracksWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		testsvc.Missing(t, "strace not found (Debian package strace): it injects the failing fsync")
	}
	for _, tc := range []struct {
		scenario string
		lost     bool
	}{
		{"synced", false}, {"durable", false}, {"reopened", false}, {"flushed", true}, {"followed", true},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			cmd := exec.Command(strace, "-f", "-qq", "-o", "/dev/null", "-P", path+".x",
				"-e", "trace=fsync", "-e", "inject=fsync:error=EIO",
				os.Args[0], "-test.run=^TestReview25bFsyncChild$")
			cmd.Env = append(os.Environ(), review25bFsync+"="+path, review25bFsync+"_SCENARIO="+tc.scenario)
			out, err := cmd.CombinedOutput()
			got := string(out)
			if err != nil {
				if strings.Contains(got, "ptrace") {
					t.Skipf("strace cannot trace here: %s", got)
				}
				t.Fatalf("child: %v\n%s", err, got)
			}
			ok := strings.Contains(got, "reopen: <nil>\n") && strings.Contains(got, "sync: <nil>\n")
			switch {
			case tc.lost && ok:
				t.Errorf("lines flushed without fsync to a file whose fsync failed passed for durable:\n%s", got)
			case tc.lost && !strings.Contains(got, "input/output error"):
				t.Errorf("want the failed fsync reported:\n%s", got)
			case !tc.lost && !ok:
				t.Errorf("nothing unsynced in the old file, yet the sink failed:\n%s", got)
			}
		})
	}
}

// TestReview25bReopenAfterClose: Reopen after Close returns ErrClosed and
// makes no file at the path.
func TestReview25bReopenAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := audit.OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Reopen(); !errors.Is(err, audit.ErrClosed) {
		t.Errorf("Reopen after Close: %v, want ErrClosed", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("Reopen after Close made a file at the path: %v", err)
	}
}
