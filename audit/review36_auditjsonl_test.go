//go:build linux

package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// review36Child makes TestReview36JSONLChild a child process that runs the
// scenario it names (see review36Scenario); review36Child+"_PATH" is the
// file the scenario writes.
const review36Child = "MCPGUARD_AUDIT_REVIEW36_CHILD"

// TestReview36JSONLChild is the child process of the tests below that
// need one of their own (a file size limit, or strace failing system
// calls): it runs the scenario and prints what it returned ("ok", or what
// went wrong). Run on its own it does nothing.
func TestReview36JSONLChild(t *testing.T) {
	scenario := os.Getenv(review36Child)
	if scenario == "" {
		return
	}
	fmt.Println(review36Scenario(scenario, os.Getenv(review36Child+"_PATH")))
	os.Exit(0)
}

// review36RunChild runs scenario in a child process, under wrap (a command
// such as strace and its arguments, or none), and returns what it printed.
func review36RunChild(t *testing.T, scenario, path string, wrap ...string) string {
	t.Helper()
	args := append(wrap, os.Args[0], "-test.run=^TestReview36JSONLChild$")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), review36Child+"="+scenario, review36Child+"_PATH="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child %s: %v\n%s", scenario, err, out)
	}
	return strings.TrimSpace(string(out))
}

// review36Event is a small valid event named id.
func review36Event(id string) *Event {
	return &Event{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), CorrelationID: id,
		Phase: PhaseIntent, Tool: "refund"}
}

// review36Scenario runs the child's part of a test and returns "ok" or
// what went wrong.
func review36Scenario(scenario, path string) string {
	ctx := context.Background()
	switch scenario {
	case "endline":
		// Another writer leaves a torn line, and the file may not grow
		// any more: the sink cannot end that line, so it cannot write.
		s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1})
		if err != nil {
			return "open: " + err.Error()
		}
		if err := s.WriteDurable(ctx, review36Event("before")); err != nil {
			return "write: " + err.Error()
		}
		other, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err.Error()
		}
		if _, err := other.WriteString(`{"time":"2026-01-02T03:04:05Z","corr`); err != nil {
			return err.Error()
		}
		st, err := other.Stat()
		if err != nil {
			return err.Error()
		}
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, rlimit(uint64(st.Size()))); err != nil {
			return "setrlimit: " + err.Error()
		}
		if err := s.Write(ctx, review36Event("after")); err != nil {
			return "write: " + err.Error()
		}
		if err := s.Flush(); err == nil {
			return "Flush = nil; want the failed write (the torn line could not be ended)"
		}
		if err := s.Write(ctx, review36Event("later")); err == nil {
			return "Write after the failed flush = nil; want the sticky error"
		}
		return "ok"
	case "syncfail":
		// strace fails every fsync of the file: Sync reports it, and the
		// sink refuses later writes.
		s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1})
		if err != nil {
			return "open: " + err.Error()
		}
		if err := s.Write(ctx, review36Event("e")); err != nil {
			return "write: " + err.Error()
		}
		if err := s.Sync(); err == nil {
			return "Sync = nil; want the failed fsync"
		}
		if err := s.Write(ctx, review36Event("later")); err == nil {
			return "Write after the failed fsync = nil; want the sticky error"
		}
		return "ok"
	case "append":
		return review36Append(path)
	case "flushfail":
		// strace fails the first call of a system call on the file (on
		// this thread, which the sink's calls all run on): the flush
		// that meets it reports it, and the sink refuses later writes.
		runtime.LockOSThread()
		s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1})
		if err != nil {
			return "open: " + err.Error()
		}
		other, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err.Error()
		}
		if _, err := other.WriteString(`{"time":"2026`); err != nil {
			return err.Error()
		}
		if err := s.Write(ctx, review36Event("e")); err != nil {
			return "write: " + err.Error()
		}
		if err := s.Flush(); err == nil {
			return "Flush = nil; want the failed system call's error"
		}
		if err := s.Write(ctx, review36Event("later")); err == nil {
			return "Write after the failed flush = nil; want the sticky error"
		}
		return "ok"
	case "movefail":
		// The sink's file is removed, and strace fails the write of the
		// moved line to the new file at the path (the third write to a
		// file of that name, after two to the removed one): the flush
		// reports it, and the sink leaves no descriptor of the new file
		// open.
		runtime.LockOSThread()
		s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1})
		if err != nil {
			return "open: " + err.Error()
		}
		if err := s.Write(ctx, review36Event("l1")); err != nil {
			return "write: " + err.Error()
		}
		if err := s.Flush(); err != nil {
			return "flush: " + err.Error()
		}
		if err := os.Remove(path); err != nil {
			return err.Error()
		}
		if err := s.Write(ctx, review36Event("l2")); err != nil {
			return "write: " + err.Error()
		}
		if err := s.Flush(); err == nil {
			return "Flush = nil; want the failed write to the new file"
		}
		if fds := review36OpenDescriptors(path); len(fds) > 0 {
			return fmt.Sprintf("the failed move left %s open: %v", path, fds)
		}
		return "ok"
	case "reopencut":
		// A flush wrote l1 without fsync; the file is rotated; the
		// write of l2 to the old file, in Reopen, is cut short (the file
		// size limit), but its fsync succeeds: l1 is durable there, l2
		// goes whole to the new file, and Reopen succeeds.
		s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1})
		if err != nil {
			return "open: " + err.Error()
		}
		if err := s.Write(ctx, review36Event("l1")); err != nil {
			return "write: " + err.Error()
		}
		if err := s.Flush(); err != nil {
			return "flush: " + err.Error()
		}
		if err := os.Rename(path, path+".1"); err != nil {
			return err.Error()
		}
		if err := s.Write(ctx, review36Event("l2")); err != nil {
			return "write: " + err.Error()
		}
		st, err := os.Stat(path + ".1")
		if err != nil {
			return err.Error()
		}
		// Room for half of l2 in the old file, all of it in the new one.
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, rlimit(uint64(st.Size()*3/2))); err != nil {
			return "setrlimit: " + err.Error()
		}
		if err := s.Reopen(); err != nil {
			return "Reopen = " + err.Error() + "; want nil: l1 is durable in the old file, l2 in the new"
		}
		if err := s.Close(); err != nil {
			return "close: " + err.Error()
		}
		for p, want := range map[string]string{path + ".1": "l1", path: "l2"} {
			f, err := os.Open(p)
			if err != nil {
				return err.Error()
			}
			var got []string
			for e, err := range ReadJSONL(f) {
				if err == nil {
					got = append(got, e.CorrelationID)
				}
			}
			f.Close()
			if fmt.Sprint(got) != "["+want+"]" {
				return fmt.Sprintf("%s reads back %v, want [%s]", p, got, want)
			}
		}
		return "ok"
	case "openfail":
		// strace fails a system call of OpenJSONL on path: OpenJSONL
		// returns the error, and leaves no descriptor of the file open.
		if s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1}); err == nil {
			s.Close()
			return "OpenJSONL = nil error; want the failed system call's"
		}
		if fds := review36OpenDescriptors(path); len(fds) > 0 {
			return fmt.Sprintf("the failed OpenJSONL left %s open: %v", path, fds)
		}
		return "ok"
	}
	return "unknown scenario " + scenario
}

// review36OpenDescriptors returns the descriptors of this process open on
// path.
func review36OpenDescriptors(path string) []string {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return []string{err.Error()}
	}
	var fds []string
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && target == path {
			fds = append(fds, e.Name())
		}
	}
	return fds
}

// TestReview36OpenEndsTornTailAtOnce: OpenJSONL itself ends a torn last
// line, before the sink writes anything: a file opened and closed without
// a write reads back with the torn line ended, so that another program
// appending to it next (a second writer that does not check) starts a line
// of its own rather than continue the torn one.
func TestReview36OpenEndsTornTailAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	line, err := review36Event("whole").AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	torn := append(append(line, '\n'), line[:20]...)
	if err := os.WriteFile(path, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := append(bytes.Clone(torn), '\n'); !bytes.Equal(got, want) {
		t.Errorf("after OpenJSONL the file holds %q, want %q (the torn line ended)", got, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReview36DeviceStats: a sink on what is not a regular file (here
// /dev/null) counts its write calls and fsyncs in Stats as on a file, and
// Sync, whose fsync such a file refuses, succeeds: the line written is as
// durable as it gets.
func TestReview36DeviceStats(t *testing.T) {
	s, err := OpenJSONL(os.DevNull, &JSONLOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(context.Background(), review36Event("e")); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Errorf("Sync on %s = %v, want nil", os.DevNull, err)
	}
	if got, want := s.Stats(), (JSONLStats{Events: 1, Writes: 1, Syncs: 1}); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}

// TestReview36TornLineThatCannotBeEnded: another writer of the file left a
// torn last line and the file may not grow (its size limit reached, as a
// full disk would): the sink cannot end that line, so it must not write
// its own after it, and must report the failed write from Flush and refuse
// later writes, rather than count the buffered record as written.
func TestReview36TornLineThatCannotBeEnded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if got := review36RunChild(t, "endline", path); got != "ok" {
		t.Errorf("child: %s", got)
	}
}

// review36Strace returns the strace command that runs a child with every
// call of syscall on the given paths failing with errno (EIO, EINVAL).
func review36Strace(t *testing.T, syscall, errno string, paths ...string) []string {
	return review36StraceWhen(t, syscall, errno, "1+", paths...)
}

// review36StraceWhen is review36Strace failing only the invocations when
// selects (strace's when=, counted per thread).
func review36StraceWhen(t *testing.T, syscall, errno, when string, paths ...string) []string {
	t.Helper()
	strace, err := exec.LookPath("strace")
	if err != nil {
		testsvc.Missing(t, "strace not found (Debian package strace): it injects the failing system calls")
	}
	args := []string{strace, "-f", "-qq", "-o", os.DevNull}
	for _, p := range paths {
		args = append(args, "-P", p)
	}
	return append(args, "-e", "trace="+syscall, "-e", "inject="+syscall+":error="+errno+":when="+when)
}

// TestReview36OpenFailures: OpenJSONL returns the error of each step that
// fails (the fstat, read and write that end a torn last line, the fsync
// of the directory of a new file), closes the file it opened, and returns
// no sink: a sink on a file whose torn line stayed unended, or whose
// directory entry may vanish in a crash, would pass records for safe.
// strace fails the system call.
func TestReview36OpenFailures(t *testing.T) {
	for _, tc := range []struct {
		name, syscall string
		torn, exists  bool
		onDir         bool
	}{
		{name: "stat", syscall: "fstat", exists: true},
		{name: "read_last_byte", syscall: "pread64", exists: true, torn: true},
		{name: "end_torn_line", syscall: "write", exists: true, torn: true},
		{name: "sync_directory", syscall: "fsync", onDir: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "audit.jsonl")
			if tc.exists {
				content := "{}\n"
				if tc.torn {
					content += `{"time":"2026`
				}
				if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			on := path
			if tc.onDir {
				on = dir
			}
			if got := review36RunChild(t, "openfail", path, review36Strace(t, tc.syscall, "EIO", on)...); got != "ok" {
				t.Errorf("child (%s fails): %s", tc.syscall, got)
			}
		})
	}
}

// TestReview36SyncEINVALOnRegularFile: an fsync of a regular file that
// fails with EINVAL is a failure, reported by Sync, like any other; only a
// pipe, socket or terminal, which cannot be fsynced, may fail it so and
// still have its line count as durable. strace fails the fsync.
func TestReview36SyncEINVALOnRegularFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := review36RunChild(t, "syncfail", path, review36Strace(t, "fsync", "EINVAL", path)...); got != "ok" {
		t.Errorf("child: %s", got)
	}
}

// review36Append is the child's part of TestReview36AppendChecked: see
// there. Its parameters come from the environment.
func review36Append(path string) string {
	env := func(k string) string { return os.Getenv(review36Child + "_" + k) }
	var before, limit int64
	if _, err := fmt.Sscan(env("BEFORE"), &before); err != nil {
		return "BEFORE: " + err.Error()
	}
	if _, err := fmt.Sscan(env("LIMIT"), &limit); err != nil {
		return "LIMIT: " + err.Error()
	}
	s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1})
	if err != nil {
		return "open: " + err.Error()
	}
	// Another writer of the file, after the sink's check found it as
	// before says.
	other, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err.Error()
	}
	if _, err := other.WriteString(env("PREFIX")); err != nil {
		return err.Error()
	}
	var b []byte
	for _, id := range []string{"l1", "l2", "l3"} {
		e := review36Event(id)
		e.Detail = strings.Repeat("d", 300)
		if b, err = e.AppendJSON(b); err != nil {
			return err.Error()
		}
		b = append(b, '\n')
	}
	if limit >= 0 {
		st, err := other.Stat()
		if err != nil {
			return err.Error()
		}
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, rlimit(uint64(st.Size()+limit))); err != nil {
			return "setrlimit: " + err.Error()
		}
	}
	s.ioSem <- struct{}{}
	n, werr := s.appendChecked(s.f, b, before)
	<-s.ioSem
	want := fmt.Sprint(len(b))
	switch env("WANT") {
	case "0":
		want = "0"
	case "limit":
		want = fmt.Sprint(limit)
	}
	if got := fmt.Sprint(n); got != want || (werr == nil) != (want == fmt.Sprint(len(b))) {
		return fmt.Sprintf("appendChecked = %d, %v; want %s bytes written (of %d)", n, werr, want, len(b))
	}
	// Every line counted as written reads back, once.
	got := map[string]int{}
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	for e, err := range ReadJSONL(f) {
		if err == nil {
			got[e.CorrelationID]++
		}
	}
	cut := bytes.LastIndexByte(b[:n], '\n') + 1
	for _, line := range bytes.SplitAfter(b[:cut], []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			return err.Error()
		}
		if got[e.CorrelationID] != 1 {
			return fmt.Sprintf("appendChecked = %d, %v: counts %s as written, which reads back %d times (records %v)",
				n, werr, e.CorrelationID, got[e.CorrelationID], got)
		}
	}
	return "ok"
}

// TestReview36AppendChecked: appendChecked, the write of a batch of lines
// after the sink checked the end of the file, reports how much of the
// batch the file took, and never counts a line that does not read back:
// when another writer tore a line after the check (prefix), the batch's
// first line continued it, and must be written again or not counted; when
// the write is cut short (the file size limit here, a full disk in life),
// the count holds the whole lines written, none if the first continued a
// torn line or appendChecked cannot tell; when the file was truncated
// after the check (copytruncate: before is -1, unknown), the batch starts
// the file and counts. strace fails the system call that would tell.
func TestReview36AppendChecked(t *testing.T) {
	const allowed = 500 // bytes of the batch the size limit lets in: l1 and part of l2
	for _, tc := range []struct {
		name, prefix string
		before       int
		limit        int // -1: none
		syscall      string
		want         string // all, 0 or limit: what appendChecked counts
	}{
		{name: "after_truncation", before: -1, limit: -1, want: "all"},
		{name: "glued_one_byte", prefix: "x", limit: -1, want: "all"},
		{name: "glued_seek_fails", prefix: "x", limit: -1, syscall: "lseek", want: "0"},
		{name: "glued_read_fails", prefix: "x", limit: -1, syscall: "pread64", want: "0"},
		{name: "cut_glued_one_byte", prefix: "x", limit: allowed, want: "0"},
		{name: "cut_glued_after_line", prefix: "{}\nx", before: 3, limit: allowed, want: "0"},
		{name: "cut_glued_seek_fails", prefix: "{}\nx", before: 3, limit: allowed, syscall: "lseek", want: "0"},
		{name: "cut_after_truncation", before: -1, limit: allowed, want: "limit"},
		{name: "cut_after_line", prefix: "{}\n", before: -1, limit: allowed, want: "limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			var wrap []string
			if tc.syscall != "" {
				wrap = review36Strace(t, tc.syscall, "EIO", path)
			}
			t.Setenv(review36Child+"_PREFIX", tc.prefix)
			t.Setenv(review36Child+"_BEFORE", fmt.Sprint(tc.before))
			t.Setenv(review36Child+"_LIMIT", fmt.Sprint(tc.limit))
			t.Setenv(review36Child+"_WANT", tc.want)
			if got := review36RunChild(t, "append", path, wrap...); got != "ok" {
				t.Errorf("child: %s", got)
			}
		})
	}
}

// TestReview36FlushFailures: a flush whose check of the end of the file
// fails (the seek to its end, or the read of its last byte) reports the
// error and leaves the sink refusing writes: the sink cannot know whether
// its line would continue another writer's torn line. strace fails the
// first such call only, so that a sink that went on regardless would
// succeed.
func TestReview36FlushFailures(t *testing.T) {
	for _, syscall := range []string{"lseek", "pread64"} {
		t.Run(syscall, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			wrap := review36StraceWhen(t, syscall, "EIO", "1", path)
			if got := review36RunChild(t, "flushfail", path, wrap...); got != "ok" {
				t.Errorf("child (first %s fails): %s", syscall, got)
			}
		})
	}
}

// review36Open opens a sink without a flusher on a new file, closed when
// the test ends, and returns it with the file's path.
func review36Open(t *testing.T) (*JSONLSink, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// review36Line is the line the sink writes for review36Event(id).
func review36Line(t *testing.T, id string) string {
	t.Helper()
	b, err := review36Event(id).AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// review36Append appends s to the file at path, as another writer would.
func review36AppendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// review36WriteFlush writes review36Event(id) to s and flushes it.
func review36WriteFlush(t *testing.T, s *JSONLSink, id string) {
	t.Helper()
	if err := s.Write(context.Background(), review36Event(id)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
}

// review36WantFile fails t unless the file at path holds exactly want.
func review36WantFile(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("the file holds\n%q\nwant\n%q", got, want)
	}
}

// TestReview36OwnLinesNeverContinueATornLine: before each write the sink
// ends a torn last line another writer left, with one newline, and adds
// none to a file that ends with one: its own lines never continue a torn
// line, not even for a moment (a reader, a crash, would see the mix), and
// the file holds exactly the other's bytes, the newline and the sink's
// lines. Stats counts the newline's write. The cases: a file that ended
// with a newline when opened; a torn line appended after the sink's own
// write; and a torn line in the new file after Reopen, as long as the old
// file was when the sink last wrote to it (the size the sink remembers
// belongs to the old file).
func TestReview36OwnLinesNeverContinueATornLine(t *testing.T) {
	torn := `{"time":"2026-01-02T03:04:05Z","correlation_id":"torn","de`
	t.Run("existing_file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		review36AppendFile(t, path, review36Line(t, "l0"))
		s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		review36WriteFlush(t, s, "l1")
		review36WantFile(t, path, review36Line(t, "l0")+review36Line(t, "l1"))
		if got := s.Stats().Writes; got != 1 {
			t.Errorf("Stats().Writes = %d, want 1", got)
		}
	})
	t.Run("torn_after_own_write", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		review36WriteFlush(t, s, "l1")
		review36AppendFile(t, path, torn)
		review36WriteFlush(t, s, "l2")
		review36WantFile(t, path, review36Line(t, "l1")+torn+"\n"+review36Line(t, "l2"))
		if got := s.Stats().Writes; got != 3 {
			t.Errorf("Stats().Writes = %d, want 3 (l1, the newline, l2)", got)
		}
	})
	t.Run("torn_after_reopen", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		review36WriteFlush(t, s, "l1")
		if err := os.Rename(path, path+".1"); err != nil {
			t.Fatal(err)
		}
		if err := s.Reopen(); err != nil {
			t.Fatal(err)
		}
		// A torn line exactly as long as the old file.
		other := torn + strings.Repeat("x", len(review36Line(t, "l1"))-len(torn))
		review36AppendFile(t, path, other)
		review36WriteFlush(t, s, "l2")
		review36WantFile(t, path, other+"\n"+review36Line(t, "l2"))
	})
}

// TestReview36LongestLine: a record whose line, newline included, is
// exactly MaxLineSize bytes long is the longest ReadJSONL reads back:
// Write takes it, and it reads back; one byte more and Write refuses it
// (ErrInvalidEvent), rather than acknowledge a record nobody can read.
func TestReview36LongestLine(t *testing.T) {
	s, path := review36Open(t)
	e := review36Event("long")
	base, err := e.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	e.Detail = "d"
	one, err := e.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	// The detail's characters, one byte each, that make the line (with
	// its newline) MaxLineSize bytes long.
	e.Detail = strings.Repeat("d", MaxLineSize-1-(len(one)-1))
	if line, err := e.AppendJSON(nil); err != nil || len(line)+1 != MaxLineSize {
		t.Fatalf("setup: line of %d bytes (%v), want %d; base %d", len(line)+1, err, MaxLineSize, len(base))
	}
	if err := s.Write(context.Background(), e); err != nil {
		t.Fatalf("Write of a %d-byte line: %v", MaxLineSize, err)
	}
	longer := *e
	longer.CorrelationID = "longer"
	longer.Detail += "d"
	if err := s.Write(context.Background(), &longer); !errors.Is(err, ErrInvalidEvent) {
		t.Errorf("Write of a %d-byte line = %v, want ErrInvalidEvent", MaxLineSize+1, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range review37Read(t, path) {
		got = append(got, fmt.Sprint(ev.CorrelationID, len(ev.Detail)))
	}
	if want := []string{fmt.Sprint("long", len(e.Detail))}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("read back %v, want %v", got, want)
	}
}

// TestReview36NULInText: a NUL byte in one of an event's own text fields
// is recorded as U+FFFD, by Write and by Keep alike, as a SQLSink stores
// it: the same event reads back the same from every sink. An event
// without one is recorded as it is.
func TestReview36NULInText(t *testing.T) {
	s, path := review36Open(t)
	ctx := context.Background()
	w := review36Event("write")
	w.Tool = "re\x00fund"
	if err := s.Write(ctx, w); err != nil {
		t.Fatal(err)
	}
	k := review36Event("keep")
	k.Detail = "a\x00b"
	if err := s.Keep(ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, review36Event("plain")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range review37Read(t, path) {
		got = append(got, ev.CorrelationID+" "+ev.Tool+" "+ev.Detail)
	}
	want := []string{"write re\uFFFDfund ", "keep refund a\uFFFDb", "plain refund "}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("read back %q, want %q", got, want)
	}
}

// TestReview36BufferSizeReached: a Write that brings the buffer to exactly
// BufferSize bytes writes it to the file before it returns, as documented
// ("the number of buffered bytes at which a Write first writes the buffer
// to the file"), with no Flush and no background flusher; one byte short,
// it stays buffered.
func TestReview36BufferSizeReached(t *testing.T) {
	line := review36Line(t, "e")
	for _, tc := range []struct {
		name string
		size int
		want string
	}{
		{name: "reached", size: len(line), want: line},
		{name: "one_short", size: len(line) + 1, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1, BufferSize: tc.size})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Write(context.Background(), review36Event("e")); err != nil {
				t.Fatal(err)
			}
			review36WantFile(t, path, tc.want)
		})
	}
}

// TestReview36WriterThatLostTheRaceToClose: a writer appends its event,
// then Close runs before the writer's flush, writes and fsyncs the event:
// the writer's flush, durable or not, returns nil, since the event is
// recorded (an error would make a caller that retries record it twice),
// while one for an event Close did not sync returns ErrClosed. The
// interleaving is reproduced by calling flush after Close, as the writer
// (holding the sequence number append gave it) would.
func TestReview36WriterThatLostTheRaceToClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	seq, _, err := s.append(review36Event("e"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.flush(ctx, true, seq); err != nil {
		t.Errorf("durable flush of event %d, which Close synced: %v, want nil", seq, err)
	}
	if err := s.flush(ctx, false, 0); err != nil {
		t.Errorf("buffered flush after Close: %v, want nil", err)
	}
	if err := s.flush(ctx, true, seq+1); !errors.Is(err, ErrClosed) {
		t.Errorf("durable flush of event %d, which Close never saw: %v, want ErrClosed", seq+1, err)
	}
	review36WantFile(t, path, review36Line(t, "e"))
}

// TestReview36GroupCommitSkipsCoveredFsync: a durable writer whose event an
// earlier fsync already covered (another writer's, in a group commit)
// returns without an fsync of its own: that sharing is what makes durable
// writes of many writers cheap. The second writer is reproduced by calling
// flush with the covered sequence number.
func TestReview36GroupCommitSkipsCoveredFsync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := OpenJSONL(path, &JSONLOptions{Durable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(context.Background(), review36Event("e")); err != nil {
		t.Fatal(err)
	}
	before := s.Stats()
	if err := s.flush(context.Background(), true, 1); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats(); got != before {
		t.Errorf("flush of a covered event: Stats() went from %+v to %+v, want no write or fsync", before, got)
	}
}

// TestReview36EmptyFlushWritesNothing: Flush and Sync with nothing
// buffered make no write call (Sync still fsyncs), and so leave alone a
// torn line another writer is still in the middle of writing: it is
// ended only before the sink's own next line.
func TestReview36EmptyFlushWritesNothing(t *testing.T) {
	s, path := review36Open(t)
	torn := `{"time":"2026`
	review36AppendFile(t, path, torn)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if got, want := s.Stats(), (JSONLStats{Syncs: 1}); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
	review36WantFile(t, path, torn)
}

// TestReview36RemovedFileReplacedByDevice: once the sink's file has no
// name left, the sink moves to the file at the path only if that is a
// regular file: here the path names a device (a symlink to /dev/null), so
// the flush fails, and keeps failing, rather than send the lines where
// they vanish and report them written.
func TestReview36RemovedFileReplacedByDevice(t *testing.T) {
	s, path := review36Open(t)
	review36WriteFlush(t, s, "l1")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(os.DevNull, path); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), review36Event("l2")); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err == nil {
		t.Errorf("Flush = nil, want an error: the path names %s, not a regular file", os.DevNull)
	}
	if err := s.Write(context.Background(), review36Event("l3")); err == nil {
		t.Errorf("Write after the failed move = nil, want the sticky error")
	}
}

// TestReview36MoveAfterRemoveSyncs: when the sink's file was removed and
// the sink moves its lines to a new file at the path, a durable write
// fsyncs the new file before it is acknowledged (its line is durable
// there, not only in the nameless file), and a buffered flush fsyncs
// neither, as a flush never does. The new file holds the moved line.
func TestReview36MoveAfterRemoveSyncs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		durable   bool
		wantSyncs uint64 // fsyncs of the second write: the old file's and the new one's, or none
	}{
		{name: "durable", durable: true, wantSyncs: 2},
		{name: "buffered", wantSyncs: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1, Durable: tc.durable})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			review36WriteFlush(t, s, "l1")
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			before := s.Stats().Syncs
			review36WriteFlush(t, s, "l2")
			if got := s.Stats().Syncs - before; got != tc.wantSyncs {
				t.Errorf("the write moved to a new file made %d fsyncs, want %d", got, tc.wantSyncs)
			}
			review36WantFile(t, path, review36Line(t, "l2"))
		})
	}
}

// TestReview36MoveFails: when the sink's file was removed and the write of
// its lines to the new file at the path fails, the flush reports it (the
// lines are only in the nameless file, which vanishes with the process)
// and the new file is closed. strace fails the write.
func TestReview36MoveFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	wrap := review36StraceWhen(t, "write", "EIO", "3+", path)
	if got := review36RunChild(t, "movefail", path, wrap...); got != "ok" {
		t.Errorf("child: %s", got)
	}
}

// TestReview36ReopenWritesKeptToOldFile: events Keep took and has not
// encoded yet are buffered lines like any other: Reopen writes them to the
// old file (the rotated one) and fsyncs it before it moves on, closes the
// old file (a rotator that deletes it gets the disk space back), and the
// next line goes to the new file.
func TestReview36ReopenWritesKeptToOldFile(t *testing.T) {
	s, path := review36Open(t)
	if err := s.Keep(context.Background(), review36Event("kept"), nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Reopen(); err != nil {
		t.Fatal(err)
	}
	review36WantFile(t, path+".1", review36Line(t, "kept"))
	if fds := review36OpenDescriptors(path + ".1"); len(fds) > 0 {
		t.Errorf("after Reopen the old file is still open: descriptors %v", fds)
	}
	review36WriteFlush(t, s, "next")
	review36WantFile(t, path, review36Line(t, "next"))
}

// review36Within runs f and fails t if it has not returned within ten
// seconds (a sink left locked).
func review36Within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return: the sink is left locked", what)
	}
}

// TestReview36ReopenRefusalLeavesSinkUsable: a Reopen that refuses (after
// Close, or after a failed write made the sink refuse writes) returns its
// error and leaves the sink's other methods answering (here with the same
// error) rather than blocked.
func TestReview36ReopenRefusalLeavesSinkUsable(t *testing.T) {
	t.Run("closed", func(t *testing.T) {
		s, err := OpenJSONL(filepath.Join(t.TempDir(), "audit.jsonl"), &JSONLOptions{FlushInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Reopen(); !errors.Is(err, ErrClosed) {
			t.Errorf("Reopen after Close = %v, want ErrClosed", err)
		}
		review36Within(t, "Flush after the refused Reopen", func() {
			if err := s.Flush(); !errors.Is(err, ErrClosed) {
				t.Errorf("Flush after Close = %v, want ErrClosed", err)
			}
		})
	})
	t.Run("failed", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "logs")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		s, err := OpenJSONL(filepath.Join(dir, "audit.jsonl"), &JSONLOptions{FlushInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		// The file and its directory removed: the flush cannot move the
		// line anywhere, and fails.
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(context.Background(), review36Event("e")); err != nil {
			t.Fatal(err)
		}
		failed := s.Flush()
		if failed == nil {
			t.Fatal("Flush with the directory removed = nil, want an error")
		}
		if err := s.Reopen(); err == nil || err.Error() != failed.Error() {
			t.Errorf("Reopen of a failed sink = %v, want the sink's error %v", err, failed)
		}
		review36Within(t, "Write after the refused Reopen", func() {
			if err := s.Write(context.Background(), review36Event("e2")); err == nil || err.Error() != failed.Error() {
				t.Errorf("Write after the refused Reopen = %v, want the sink's error %v", err, failed)
			}
		})
		review36Within(t, "Close after the refused Reopen", func() { s.Close() })
	})
}

// TestReview36ReopenStats: a Reopen with nothing buffered makes no write
// and one fsync (of the old file), and Stats counts them so.
func TestReview36ReopenStats(t *testing.T) {
	s, err := OpenJSONL(filepath.Join(t.TempDir(), "audit.jsonl"), &JSONLOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Reopen(); err != nil {
		t.Fatal(err)
	}
	if got, want := s.Stats(), (JSONLStats{Syncs: 1}); got != want {
		t.Errorf("Stats() after Reopen = %+v, want %+v", got, want)
	}
}

// TestReview36ReopenOldWriteCut: when Reopen's write of the buffered
// lines to the old file is cut short (a full disk; the file size limit
// here) after earlier flushes wrote lines to it without fsync, and the
// old file's fsync then succeeds, nothing is lost: the earlier lines are
// durable in the old file, the cut line goes whole to the new one, and
// Reopen returns nil and leaves the sink writing.
func TestReview36ReopenOldWriteCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if got := review36RunChild(t, "reopencut", path); got != "ok" {
		t.Errorf("child: %s", got)
	}
}

// TestReview36ReopenErrorNamesOnlyTheOpen: a Reopen whose only failure is
// the open of the path (its directory removed), with nothing buffered,
// returns that error alone: it names no failed write, since none failed,
// and the sink writes on to the old file.
func TestReview36ReopenErrorNamesOnlyTheOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "audit.jsonl")
	s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := os.Rename(dir, dir+".1"); err != nil {
		t.Fatal(err)
	}
	err = s.Reopen()
	if !errors.Is(err, os.ErrNotExist) || strings.Contains(err.Error(), "write") {
		t.Errorf("Reopen = %v, want the open's error alone (not exist)", err)
	}
	review36WriteFlush(t, s, "l1")
	review36WantFile(t, filepath.Join(dir+".1", "audit.jsonl"), review36Line(t, "l1"))
}

// TestReview36ReopenRefusesPipeAndClosesIt: Reopen refuses a named pipe
// at the path (the sink's file is a regular one) and closes what it
// opened: a sink that a rotation script keeps reopening must not gather
// descriptors of the pipe, each one a writer that keeps its reader from
// seeing the end of it.
func TestReview36ReopenRefusesPipeAndClosesIt(t *testing.T) {
	s, path := review36Open(t)
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Reopen(); err == nil {
		t.Fatal("Reopen onto a named pipe = nil, want an error")
	}
	if fds := review36OpenDescriptors(path); len(fds) > 0 {
		t.Errorf("the refused Reopen left %s open: descriptors %v", path, fds)
	}
}

// TestReview36CloseTwice: a second Close returns ErrClosed and leaves the
// sink's other methods answering ErrClosed rather than blocked.
func TestReview36CloseTwice(t *testing.T) {
	s, err := OpenJSONL(filepath.Join(t.TempDir(), "audit.jsonl"), &JSONLOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
	review36Within(t, "Flush after the second Close", func() {
		if err := s.Flush(); !errors.Is(err, ErrClosed) {
			t.Errorf("Flush after Close = %v, want ErrClosed", err)
		}
	})
}
