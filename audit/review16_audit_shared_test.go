//go:build linux

package audit_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// review16Child is the environment variable that makes
// TestReview16ChildProcess one of the children below: "fsize:<path>" or
// "flood:<path>".
const review16Child = "MCPGUARD_AUDIT_REVIEW16_CHILD"

// TestReview16ChildProcess is a child process of the tests in this file.
//
// fsize: it opens its own durable sink on the file, limits the size of the
// files it writes (RLIMIT_FSIZE) to 2000 bytes past the file's end and
// makes a WriteDurable of a 10000-byte record, which the limit cuts short.
// It prints "refused: <error>" or "acknowledged".
//
// panic: it writes 100 records and a kept one through a buffered sink,
// waits ten flush intervals, writes 100 more and panics in a goroutine
// nobody recovers in.
//
// flood: it writes records of 256 KiB through a buffered sink whose
// buffer holds 16 of them, so that much of its time goes into long write
// calls, and prints "ready" after its first one, until it is killed.
func TestReview16ChildProcess(t *testing.T) {
	mode, path, ok := strings.Cut(os.Getenv(review16Child), ":")
	if !ok {
		return // only meaningful as a child of this file's tests
	}
	switch mode {
	case "fsize":
		s, err := audit.OpenJSONL(path, &audit.JSONLOptions{Durable: true})
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(2)
		}
		st, err := os.Stat(path)
		if err != nil {
			fmt.Println("stat:", err)
			os.Exit(2)
		}
		lim := &syscall.Rlimit{Cur: uint64(st.Size()) + 2000, Max: uint64(st.Size()) + 2000}
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, lim); err != nil {
			fmt.Println("setrlimit:", err)
			os.Exit(2)
		}
		if err := s.WriteDurable(context.Background(), diskEvent("child-cut", 10000)); err != nil {
			fmt.Println("refused:", err)
		} else {
			fmt.Println("acknowledged")
		}
		os.Exit(0) // no Close: the process ends as a crash would end it
	case "panic":
		s, err := audit.OpenJSONL(path, &audit.JSONLOptions{FlushInterval: 20 * time.Millisecond})
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(2)
		}
		ctx := context.Background()
		for i := range 100 {
			if err := s.Write(ctx, diskEvent("early-"+strconv.Itoa(i), 10)); err != nil {
				fmt.Println("write:", err)
				os.Exit(3)
			}
		}
		e := diskEvent("kept", 10)
		if err := s.Keep(ctx, e, []byte(`{"a":1}`)); err != nil {
			fmt.Println("keep:", err)
			os.Exit(3)
		}
		time.Sleep(200 * time.Millisecond) // ten flush intervals
		for i := range 100 {
			if err := s.Write(ctx, diskEvent("late-"+strconv.Itoa(i), 10)); err != nil {
				fmt.Println("write:", err)
				os.Exit(3)
			}
		}
		go func() { panic("a bug elsewhere in the server") }()
		select {} // the panic ends the process
	case "flood":
		s, err := audit.OpenJSONL(path, &audit.JSONLOptions{BufferSize: 4 << 20, FlushInterval: -1})
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(2)
		}
		e := diskEvent("", 256<<10)
		for i := 0; ; i++ {
			e.CorrelationID = "flood-" + strconv.Itoa(i)
			if err := s.Write(context.Background(), e); err != nil {
				fmt.Println("write:", err)
				os.Exit(3)
			}
			if i == 16 {
				fmt.Println("ready")
			}
		}
	}
}

// review16Start starts TestReview16ChildProcess in mode on path. What the
// child writes to its standard error is in cmd.Stderr, a *bytes.Buffer,
// once cmd.Wait returned.
func review16Start(t *testing.T, mode, path string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestReview16ChildProcess$")
	cmd.Env = append(os.Environ(), review16Child+"="+mode+":"+path)
	cmd.Stderr = new(bytes.Buffer)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewScanner(out)
}

// lastByte returns the last byte of the file at path (0 for an empty file).
func lastByte(t *testing.T, path string) byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		return 0
	}
	return b[len(b)-1]
}

// TestReview16SharedFileCutByAnotherProcess: two processes append to one
// JSONL file (the refund example's README: "a trail ... that two processes
// share"). The other process's write is cut short by its file size limit,
// which leaves a torn line at the end of the file, and its WriteDurable is
// refused. This process's sink, open all along, writes on: every record it
// acknowledged reads back, and the torn line is the only bad one. Before
// the fix its next line was appended to the torn one, and the two read back
// as one corrupt line: an acknowledged write-ahead record lost.
func TestReview16SharedFileCutByAnotherProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	for _, durable := range []bool{true, false} {
		t.Run(fmt.Sprintf("durable_%v", durable), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			s, err := audit.OpenJSONL(path, &audit.JSONLOptions{Durable: durable, FlushInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			if err := s.WriteDurable(ctx, diskEvent("before", 10)); err != nil {
				t.Fatal(err)
			}

			cmd, out := review16Start(t, "fsize", path)
			var said []string
			for out.Scan() {
				said = append(said, out.Text())
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("child: %v (it said %q; %s)", err, said, cmd.Stderr)
			}
			if len(said) != 1 || !strings.HasPrefix(said[0], "refused: ") || !strings.Contains(said[0], "file too large") {
				t.Fatalf("the child's WriteDurable past its file size limit: %q, want it refused with EFBIG", said)
			}
			if b := lastByte(t, path); b == '\n' {
				t.Fatal("the child left no torn line: the case is not set up")
			}

			want := []string{"after-1", "after-2", "after-3"}
			for _, id := range want[:2] {
				if err := s.Write(ctx, diskEvent(id, 10)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.WriteDurable(ctx, diskEvent(want[2], 10)); err != nil {
				t.Fatal(err)
			}
			ids, lineErrs := readDiskFile(t, path)
			for _, id := range append([]string{"before"}, want...) {
				if ids[id] != 1 {
					t.Errorf("acknowledged record %s read back %d times, want once (file: %v, bad lines: %v)", id, ids[id], ids, lineErrs)
				}
			}
			if ids["child-cut"] != 0 {
				t.Errorf("the cut record of the child read back as a record")
			}
			if len(lineErrs) != 1 {
				t.Errorf("bad lines %v, want one: the child's cut line", lineErrs)
			}
			if got, err := audit.QueryJSONL(path, audit.Filter{CorrelationID: "after-1"}); len(got) != 1 {
				t.Errorf("QueryJSONL of after-1: %d events, %v; want 1", len(got), err)
			}
		})
	}
}

// TestReview16SharedFileSIGKILL: the same with the other process killed by
// SIGKILL in the middle of a long write, which the kernel cuts short (most
// often once the writer waits for the page cache to drain). It kills new
// children until one leaves a torn line, or gives up after a few: a kill
// between two write calls leaves none, and then only the clean case ran.
func TestReview16SharedFileSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := audit.OpenJSONL(path, &audit.JSONLOptions{Durable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	torn := 0
	for try := 0; try < 8 && torn == 0; try++ {
		cmd, out := review16Start(t, "flood", path)
		if !out.Scan() || out.Text() != "ready" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child: %q, %v", out.Text(), out.Err())
		}
		time.Sleep(time.Duration(150+try*23%250) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		// The start of the child's last line: its records are 256 KiB.
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		tail := make([]byte, min(st.Size(), 1<<20))
		if _, err := f.ReadAt(tail, st.Size()-int64(len(tail))); err != nil {
			t.Fatal(err)
		}
		from := st.Size() - int64(len(tail)) + int64(bytes.LastIndexByte(tail[:len(tail)-1], '\n')+1)
		if tail[len(tail)-1] != '\n' {
			torn++
		}

		id := "parent-" + strconv.Itoa(try)
		if err := s.WriteDurable(ctx, diskEvent(id, 10)); err != nil {
			t.Fatal(err)
		}
		var got []string
		var bad []error
		for e, err := range audit.ReadJSONL(io.NewSectionReader(f, from, 1<<40)) {
			if err != nil {
				bad = append(bad, err)
				continue
			}
			got = append(got, e.CorrelationID)
		}
		f.Close()
		if len(got) == 0 || got[len(got)-1] != id {
			t.Fatalf("try %d (the child's last line torn: %v): the file ends with records %q and bad lines %v, want the acknowledged %s last",
				try, tail[len(tail)-1] != '\n', got, bad, id)
		}
		// A new file for the next try (through the rotation the sink
		// supports), so that the files stay small.
		if err := os.Rename(path, path+".old"); err != nil {
			t.Fatal(err)
		}
		if err := s.Reopen(); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(path + ".old"); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("a kill left a torn line %d times", torn)
}

// TestReview16BufferedSinkAndPanic: a buffered sink loses what it holds
// when the process dies of a panic that nothing recovers (Close never
// runs), but no more: what was written (or kept) a flush interval before
// is in the file, whole.
func TestReview16BufferedSinkAndPanic(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd, out := review16Start(t, "panic", path)
	var said []string
	for out.Scan() {
		said = append(said, out.Text())
	}
	if err := cmd.Wait(); err == nil || len(said) > 0 || !strings.Contains(cmd.Stderr.(*bytes.Buffer).String(), "a bug elsewhere") {
		t.Fatalf("child: %v, said %q, %s; want it dead of its panic", err, said, cmd.Stderr)
	}
	ids, bad := readDiskFile(t, path)
	if len(bad) > 0 {
		t.Errorf("bad lines: %v", bad)
	}
	for i := range 100 {
		if id := "early-" + strconv.Itoa(i); ids[id] != 1 {
			t.Errorf("%s, written ten flush intervals before the panic, is %d times in the file", id, ids[id])
		}
	}
	if ids["kept"] != 1 {
		t.Errorf("the kept event is %d times in the file", ids["kept"])
	}
	late := 0
	for i := range 100 {
		late += ids["late-"+strconv.Itoa(i)]
	}
	t.Logf("of the 100 records written just before the panic, %d reached the file", late)
}
