package audit_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

const review25Child = "MCPGUARD_AUDIT_REVIEW25_CHILD"

// TestReview25ChildProcess is the child of TestReview25SQLiteCrash: it
// writes events to a SQLite sink from four goroutines (every third
// through WriteDurable, the others through Write, acknowledged once a
// Flush after them returned) and prints each correlation id it was told
// is committed, until it is killed.
func TestReview25ChildProcess(t *testing.T) {
	path := os.Getenv(review25Child)
	if path == "" {
		return // only meaningful as a child of TestReview25SQLiteCrash
	}
	db, err := audit.OpenSQLite(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s, err := audit.NewSQL(context.Background(), db, audit.SQLite, &audit.SQLOptions{BatchSize: 64})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	ack := func(ids ...string) {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			fmt.Fprintln(out, id)
		}
		out.Flush()
	}
	ctx := context.Background()
	for w := range 4 {
		go func() {
			var queued []string
			for i := 0; ; i++ {
				e := event(fmt.Sprintf("w%d-%d", w, i), i)
				e.Detail = strings.Repeat("d", i%3000)
				if i%3 == 0 {
					if err := s.WriteDurable(ctx, e); err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(3)
					}
					ack(e.CorrelationID)
					continue
				}
				if err := s.Write(ctx, e); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(3)
				}
				queued = append(queued, e.CorrelationID)
				if len(queued) == 7 {
					if err := s.Flush(ctx); err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(3)
					}
					ack(queued...)
					queued = queued[:0]
				}
			}
		}()
	}
	select {}
}

// TestReview25SQLiteCrash kills a process writing to SQLite with SIGKILL
// mid-stream: every event it was told is committed (WriteDurable returned,
// or a Flush after its Write did) reads back, once.
func TestReview25SQLiteCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestReview25ChildProcess$")
	cmd.Env = append(os.Environ(), review25Child+"="+path)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]bool{}
	sc := bufio.NewScanner(stdout)
	for len(acked) < 2000 && sc.Scan() {
		acked[sc.Text()] = true
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "w") {
			acked[line] = true
		}
	}
	cmd.Wait()
	if len(acked) < 2000 {
		t.Fatalf("child acknowledged only %d events before exiting", len(acked))
	}
	db, err := audit.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	evs, err := audit.QuerySQL(context.Background(), db, audit.SQLite, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, e := range evs {
		var w, i int
		if _, err := fmt.Sscanf(e.CorrelationID, "w%d-%d", &w, &i); err != nil || len(e.Detail) != i%3000 {
			t.Fatalf("event %q is not one the child wrote whole", e.CorrelationID)
		}
		got[e.CorrelationID]++
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("event %s recorded %d times", id, n)
		}
	}
	for id := range acked {
		if got[id] == 0 {
			t.Errorf("acknowledged event %s missing after the crash", id)
		}
	}
	t.Logf("acknowledged %d, in the table %d", len(acked), len(evs))
}

// TestReview25CloseUnderLoad: writers keep writing (Write, Keep and
// WriteDurable) while the sink is closed: every event a call accepted is
// in the table once Close returned nil, once; the others returned
// ErrClosed.
func TestReview25CloseUnderLoad(t *testing.T) {
	for _, kind := range []string{"sqlite", "jsonl", "jsonl-durable"} {
		t.Run(kind, func(t *testing.T) {
			for round := range 8 {
				dir := t.TempDir()
				var s interface {
					audit.Keeper
					audit.DurableWriter
					Close() error
				}
				var read func() []audit.Event
				switch kind {
				case "sqlite":
					db, err := audit.OpenSQLite(filepath.Join(dir, "a.db"))
					if err != nil {
						t.Fatal(err)
					}
					defer db.Close()
					ss, err := audit.NewSQL(context.Background(), db, audit.SQLite, &audit.SQLOptions{QueueSize: 16, BatchSize: 8})
					if err != nil {
						t.Fatal(err)
					}
					s = ss
					read = func() []audit.Event {
						evs, err := audit.QuerySQL(context.Background(), db, audit.SQLite, audit.Filter{})
						if err != nil {
							t.Fatal(err)
						}
						return evs
					}
				default:
					path := filepath.Join(dir, "a.jsonl")
					js, err := audit.OpenJSONL(path, &audit.JSONLOptions{Durable: kind == "jsonl-durable", BufferSize: 512, FlushInterval: 50 * time.Microsecond})
					if err != nil {
						t.Fatal(err)
					}
					s = js
					read = func() []audit.Event {
						evs, errs := readAll(t, path)
						if len(errs) > 0 {
							t.Fatal(errs[0])
						}
						return evs
					}
				}
				ctx := context.Background()
				var mu sync.Mutex
				acked := map[string]bool{}
				var wg sync.WaitGroup
				for w := range 6 {
					wg.Go(func() {
						for i := 0; ; i++ {
							e := event(fmt.Sprintf("w%d-%d", w, i), i)
							var err error
							switch i % 3 {
							case 0:
								err = s.Write(ctx, e)
							case 1:
								e.ArgsSHA256 = ""
								err = s.Keep(ctx, e, []byte(`{"a":1}`))
							default:
								err = s.WriteDurable(ctx, e)
							}
							if err != nil {
								if !errors.Is(err, audit.ErrClosed) {
									t.Errorf("%s: %v", e.CorrelationID, err)
								}
								return
							}
							mu.Lock()
							acked[fmt.Sprintf("w%d-%d", w, i)] = true
							mu.Unlock()
						}
					})
				}
				for {
					mu.Lock()
					n := len(acked)
					mu.Unlock()
					if n >= 200+round*20 {
						break
					}
					runtime.Gosched()
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				wg.Wait()
				got := map[string]int{}
				for _, e := range read() {
					got[e.CorrelationID]++
				}
				for id := range acked {
					if got[id] != 1 {
						t.Fatalf("round %d: accepted event %s recorded %d times", round, id, got[id])
					}
				}
			}
		})
	}
}

const review25Fsync = "MCPGUARD_AUDIT_REVIEW25_FSYNC"

// TestReview25FsyncChild is the child of TestReview25ReopenFsyncFails,
// run under strace, which fails every fsync of the file at path with EIO:
// it writes a record, flushes it to the file (without fsync), calls
// Reopen (the path still names the file) and then Sync, and prints what
// each returned.
func TestReview25FsyncChild(t *testing.T) {
	path := os.Getenv(review25Fsync)
	if path == "" {
		return // only meaningful as a child of TestReview25ReopenFsyncFails
	}
	s, err := audit.OpenJSONL(path, &audit.JSONLOptions{FlushInterval: -1})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	if os.Getenv(review25Fsync+"_GROUP") != "" {
		// Durable writers sharing fsyncs that all fail: each is told.
		d, err := audit.OpenJSONL(path+".durable", &audit.JSONLOptions{Durable: true})
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(2)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		acked := 0
		for w := range 16 {
			wg.Go(func() {
				for i := range 20 {
					if d.WriteDurable(ctx, event(fmt.Sprintf("w%d-%d", w, i), i)) == nil {
						mu.Lock()
						acked++
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		fmt.Println("acknowledged:", acked)
		os.Exit(0)
	}
	if err := s.Write(ctx, event("flushed", 1)); err != nil {
		fmt.Println("write:", err)
		os.Exit(2)
	}
	if err := s.Flush(); err != nil {
		fmt.Println("flush:", err)
		os.Exit(2)
	}
	if os.Getenv(review25Fsync+"_CONTROL") == "" {
		fmt.Println("reopen:", s.Reopen())
	}
	fmt.Println("sync:", s.Sync())
	os.Exit(0)
}

// TestReview25ReopenFsyncFails: when the fsync of the old file fails in
// Reopen, the lines an earlier flush wrote to it (without fsync) are not
// durable and cannot be written again: neither Reopen nor a later Sync,
// which must not pass them for durable, returns nil (as a Sync without the
// Reopen would not). An fsync failure is injected with strace.
func TestReview25ReopenFsyncFails(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		testsvc.Missing(t, "strace not found (Debian package strace): it injects the failing fsync")
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(control bool, env ...string) string {
		cmd := exec.Command(strace, "-f", "-qq", "-o", "/dev/null", "-P", path, "-P", path+".durable",
			"-e", "trace=fsync", "-e", "inject=fsync:error=EIO",
			os.Args[0], "-test.run=^TestReview25FsyncChild$")
		cmd.Env = append(os.Environ(), review25Fsync+"="+path)
		if control {
			cmd.Env = append(cmd.Env, review25Fsync+"_CONTROL=1")
		}
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			if strings.Contains(string(out), "ptrace") {
				t.Skipf("strace cannot trace here: %s", out)
			}
			t.Fatalf("child: %v\n%s", err, out)
		}
		return string(out)
	}
	// Without Reopen, Sync reports the failed fsync: strace injects it.
	if got := run(true); !strings.Contains(got, "sync: audit: jsonl write:") || !strings.Contains(got, "input/output error") {
		t.Skipf("strace did not fail the fsync: the child printed\n%s", got)
	}
	got := run(false)
	if !strings.Contains(got, "reopen:") || !strings.Contains(got, "sync:") {
		t.Fatalf("child printed:\n%s", got)
	}
	if strings.Contains(got, "reopen: <nil>") && strings.Contains(got, "sync: <nil>") {
		t.Errorf("the old file's fsync failed, yet Reopen and Sync both returned nil: the flushed record passes for durable\n%s", got)
	}
}

// TestReview25GroupCommitFsyncFails: durable writers of one file share
// its fsyncs; when they fail (injected with strace), every writer is told,
// none is acknowledged.
func TestReview25GroupCommitFsyncFails(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		testsvc.Missing(t, "strace not found (Debian package strace): it injects the failing fsync")
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd := exec.Command(strace, "-f", "-qq", "-o", "/dev/null", "-P", path+".durable",
		"-e", "trace=fsync", "-e", "inject=fsync:error=EIO",
		os.Args[0], "-test.run=^TestReview25FsyncChild$")
	cmd.Env = append(os.Environ(), review25Fsync+"="+path, review25Fsync+"_GROUP=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "ptrace") {
			t.Skipf("strace cannot trace here: %s", out)
		}
		t.Fatalf("child: %v\n%s", err, out)
	}
	if got := string(out); !strings.Contains(got, "acknowledged: 0\n") {
		t.Errorf("durable writes acknowledged though every fsync failed:\n%s", got)
	}
}
