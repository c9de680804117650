//go:build unix

package audit_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// review58hChild selects the writer mode of TestReview58hChild;
// review58hChild+"_PATH" is its file and review58hChild+"_ROUND" the prefix
// of its ids, so that the ids of restarted writers never repeat.
const review58hChild = "MCPGUARD_AUDIT_REVIEW58H_CHILD"

// review58hEvent is the event named by round r, goroutine g and number i.
// Its detail is long (up to about 24 KiB, 256 KiB more from goroutine 0)
// and varies, so that lines span pages and a kill may cut a write short;
// what it holds follows from its id, so a reader can tell a whole record
// from one that lost fields.
func review58hEvent(r, g, i int) *audit.Event {
	id := fmt.Sprintf("r%d-w%d-%d", r, g, i)
	return &audit.Event{
		Time:          time.Date(2026, 7, 28, 0, 0, 0, r*1e8+g*1e7+i, time.UTC),
		CorrelationID: id, SessionID: "sess-" + id, Subject: "alice",
		Roles: []string{"admin", "r" + strconv.Itoa(r)}, Tool: "refund", Class: "write",
		Phase: audit.PhaseIntent, Allowed: true, Code: "OK",
		Detail:    strings.Repeat("d", review58hDetailLen(r, g, i)),
		LatencyMS: 1.5, Cost: float64(i%97 + 1), ProtocolVersion: "2026-07-28",
		ClientName: "tail-" + id,
	}
}

func review58hDetailLen(r, g, i int) int {
	n := (i*7919 + g*131 + r*17) % 24000
	if g == 0 {
		// Lines of about 256 KiB from one of the goroutines: a write that
		// long is the one a kill may cut short, leaving a torn line.
		n += 256 << 10
	}
	return n
}

// review58hArgs are the arguments Keep hashes into the event (i's).
func review58hArgs(i int) json.RawMessage { return json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`) }

// review58hCheck reports what is wrong with ev, a record read back: it must
// be the whole event its id names, every field as written.
func review58hCheck(ev *audit.Event) error {
	var r, g, i int
	if _, err := fmt.Sscanf(ev.CorrelationID, "r%d-w%d-%d", &r, &g, &i); err != nil {
		return fmt.Errorf("id %q: %v", ev.CorrelationID, err)
	}
	want := review58hEvent(r, g, i)
	detailOK := len(ev.Detail) == review58hDetailLen(r, g, i) && strings.Trim(ev.Detail, "d") == ""
	want.Detail = ""
	switch {
	case !ev.Time.Equal(want.Time), ev.SessionID != want.SessionID, ev.Subject != want.Subject,
		!slices.Equal(ev.Roles, want.Roles), ev.Tool != want.Tool, ev.Class != want.Class,
		ev.Phase != want.Phase, !ev.Allowed, ev.Code != want.Code, !detailOK,
		ev.LatencyMS != want.LatencyMS, ev.Cost != want.Cost,
		ev.ProtocolVersion != want.ProtocolVersion, ev.ClientName != want.ClientName:
		return fmt.Errorf("record %s is not the event written (detail %d bytes of %d)",
			ev.CorrelationID, len(ev.Detail), len(want.Detail))
	}
	switch i % 4 {
	case 1: // Keep
		if ev.ArgsSHA256 != audit.ArgsSHA256(review58hArgs(i)) {
			return fmt.Errorf("record %s: args_sha256 %q", ev.CorrelationID, ev.ArgsSHA256)
		}
	case 3: // Write with Args
		if n, ok := ev.Args["i"].(float64); !ok || n != float64(i) {
			return fmt.Errorf("record %s: args %v", ev.CorrelationID, ev.Args)
		}
	}
	return nil
}

// TestReview58hChild is the child of the crash tests below: from eight
// goroutines it floods a sink (Write, Keep, WriteDurable, Write with Args,
// in turn; with "jsonl-reopen" a ninth renames the file away and calls
// Reopen every few milliseconds) and prints "A id" for each event it was
// told is durable, until it is killed. For a JSONL sink that is the event
// WriteDurable returned nil for and every event its goroutine wrote or kept
// before it ([JSONLSink.WriteDurable]: "every event written before it");
// for SQL, the event WriteDurable committed. Run on its own it does nothing.
func TestReview58hChild(t *testing.T) {
	mode := os.Getenv(review58hChild)
	if mode == "" {
		return
	}
	path := os.Getenv(review58hChild + "_PATH")
	round, _ := strconv.Atoi(os.Getenv(review58hChild + "_ROUND"))
	die := func(code int, err error) {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(code)
	}
	ctx := context.Background()
	var sink interface {
		audit.Keeper
		WriteDurable(context.Context, *audit.Event) error
	}
	var js *audit.JSONLSink
	switch mode {
	case "jsonl-buffered", "jsonl-reopen":
		s, err := audit.OpenJSONL(path, &audit.JSONLOptions{FlushInterval: time.Millisecond, BufferSize: 48 << 10})
		if err != nil {
			die(2, err)
		}
		sink, js = s, s
	case "jsonl-durable":
		s, err := audit.OpenJSONL(path, &audit.JSONLOptions{Durable: true})
		if err != nil {
			die(2, err)
		}
		sink = s
	case "sqlite":
		db, err := audit.OpenSQLite(path)
		if err != nil {
			die(2, err)
		}
		s, err := audit.NewSQL(ctx, db, audit.SQLite, &audit.SQLOptions{BatchSize: 64})
		if err != nil {
			die(2, err)
		}
		sink = s
	default:
		die(2, fmt.Errorf("unknown mode %q", mode))
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	ack := func(ids []string) {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			fmt.Fprintln(out, "A", id)
		}
		if err := out.Flush(); err != nil {
			os.Exit(4)
		}
	}
	for g := range 8 {
		go func() {
			var pending []string
			for i := 0; ; i++ {
				e := review58hEvent(round, g, i)
				var err error
				switch i % 4 {
				case 0:
					err = sink.Write(ctx, e)
				case 1:
					err = sink.Keep(ctx, e, review58hArgs(i))
				case 2:
					err = sink.WriteDurable(ctx, e)
				case 3:
					e.Args = map[string]any{"i": i}
					err = sink.Write(ctx, e)
				}
				if err != nil {
					die(3, fmt.Errorf("%s: %w", e.CorrelationID, err))
				}
				pending = append(pending, e.CorrelationID)
				if i%4 == 2 {
					if mode == "sqlite" {
						pending = pending[len(pending)-1:]
					}
					ack(pending)
					pending = pending[:0]
				}
			}
		}()
	}
	if mode == "jsonl-reopen" {
		go func() {
			for n := 0; ; n++ {
				time.Sleep(time.Duration(1+n%4) * time.Millisecond)
				if err := os.Rename(path, fmt.Sprintf("%s.r%d.%d", path, round, n)); err != nil {
					die(5, err)
				}
				if err := js.Reopen(); err != nil {
					die(5, err)
				}
			}
		}()
	}
	select {}
}

// review58hRun starts the child in mode on path as round r, kills it with
// SIGKILL delay after it acknowledged its first 40 events, and returns the
// ids it acknowledged.
func review58hRun(t *testing.T, mode, path string, r int, delay time.Duration) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestReview58hChild$")
	cmd.Env = append(os.Environ(), review58hChild+"="+mode, review58hChild+"_PATH="+path,
		review58hChild+"_ROUND="+strconv.Itoa(r))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		acked []string
		n     atomic.Int64
	)
	first := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			id, ok := strings.CutPrefix(sc.Text(), "A ")
			if !ok {
				continue
			}
			mu.Lock()
			acked = append(acked, id)
			mu.Unlock()
			if n.Add(1) == 40 {
				close(first)
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case <-first:
	case <-done:
		cmd.Wait()
		t.Fatalf("round %d: the child ended before 40 acknowledgements: %s", r, stderr.Bytes())
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("round %d: no 40 acknowledgements in 10 s: %s", r, stderr.Bytes())
	}
	time.Sleep(delay)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done // whatever it printed before it died was acknowledged too
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("round %d: the child was not killed but ended: %v: %s", r, err, stderr.Bytes())
	}
	return acked
}

// review58hFiles returns path and the files rotated away from it.
func review58hFiles(t *testing.T, path string) []string {
	t.Helper()
	rotated, err := filepath.Glob(path + ".r*")
	if err != nil {
		t.Fatal(err)
	}
	files := append(rotated, path)
	var out []string
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			out = append(out, f)
		}
	}
	return out
}

// review58hCheckJSONL reads every file three ways (ReadJSONL, QueryJSONL,
// and line by line with a plain json.Unmarshal) and checks that each
// acknowledged id is a whole record, that no torn or glued line reads as a
// record, and that a line that is not a record is reported as such.
func review58hCheckJSONL(t *testing.T, files []string, acked map[string]bool) (records, bad, torn int) {
	t.Helper()
	got := map[string]int{}
	plain := map[string]bool{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		// Plain reader: each line on its own, as a consumer without this
		// package reads the trail.
		lines := bytes.SplitAfter(data, []byte("\n"))
		for n, line := range lines {
			if len(line) == 0 {
				continue
			}
			if c := bytes.Count(line, []byte(`{"time":"`)); c > 1 {
				t.Errorf("%s line %d: %d records glued into one line: %.200q", filepath.Base(file), n+1, c, line)
			}
			var ev audit.Event
			if err := json.Unmarshal(bytes.TrimRight(line, "\n"), &ev); err != nil {
				continue
			}
			if line[len(line)-1] != '\n' {
				// A whole record without its newline: a write cut just
				// before it. Not acknowledged; it must not be relied on.
				continue
			}
			if err := review58hCheck(&ev); err != nil {
				t.Errorf("%s line %d parses as JSON but is no whole record: %v", filepath.Base(file), n+1, err)
				continue
			}
			plain[ev.CorrelationID] = true
		}
		// The package's reader.
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		for ev, err := range audit.ReadJSONL(f) {
			if err != nil {
				var le *audit.LineError
				if !errors.As(err, &le) {
					t.Fatalf("%s: ReadJSONL: %v", file, err)
				}
				bad++
				continue
			}
			if err := review58hCheck(&ev); err != nil {
				t.Errorf("%s: ReadJSONL returned a record that is not whole: %v", filepath.Base(file), err)
				continue
			}
			got[ev.CorrelationID]++
			records++
		}
		f.Close()
		evs, qerr := audit.QueryJSONL(file, audit.Filter{})
		if len(data) > 0 && data[len(data)-1] != '\n' {
			torn++
			if !errors.Is(qerr, audit.ErrTornLine) {
				t.Errorf("%s ends in a torn line, which QueryJSONL does not report: %v", filepath.Base(file), qerr)
			}
		}
		for _, err := range review58hUnjoin(qerr) {
			var le *audit.LineError
			if !errors.As(err, &le) {
				t.Fatalf("%s: QueryJSONL: %v", file, qerr)
			}
		}
		for i := range evs {
			if err := review58hCheck(&evs[i]); err != nil {
				t.Errorf("%s: QueryJSONL returned a record that is not whole: %v", filepath.Base(file), err)
			}
		}
	}
	for id, c := range got {
		if c > 1 {
			// Allowed across files after a Reopen ("a line may read back
			// from both files"); within one trail, note it.
			t.Logf("id %s read back %d times", id, c)
		}
	}
	missing := 0
	for id := range acked {
		if got[id] == 0 {
			missing++
			if missing <= 10 {
				t.Errorf("acknowledged durable event %s missing after SIGKILL", id)
			}
		} else if !plain[id] {
			t.Errorf("acknowledged event %s: ReadJSONL reads it but a plain json.Unmarshal of its line does not", id)
		}
	}
	if missing > 10 {
		t.Errorf("... %d acknowledged events missing in all", missing)
	}
	return records, bad, torn
}

func review58hUnjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// review58hJSONL runs a writer in mode on a JSONL file, kills it with
// SIGKILL at three moments, starting it again on the same file each time,
// and checks the file after each kill (see review58hCheckJSONL). A kill
// seldom lands inside a write call (the kernel cuts a write short only
// where it waits, for the page cache to drain): where it left the file
// ending with a whole line, the test appends what a write cut short leaves,
// the start of a record (round 1: all of it but its newline), before the
// writer starts again.
func review58hJSONL(t *testing.T, mode string) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	rng := rand.New(rand.NewPCG(58, uint64(len(mode))))
	acked := map[string]bool{}
	for r := range 3 {
		delay := time.Duration(rng.IntN(120)) * time.Millisecond
		for _, id := range review58hRun(t, mode, path, r, delay) {
			acked[id] = true
		}
		records, bad, torn := review58hCheckJSONL(t, review58hFiles(t, path), acked)
		t.Logf("round %d (kill %v after 40 acks): acknowledged %d in all, records %d, bad lines %d, torn tails %d",
			r, delay, len(acked), records, bad, torn)
		if t.Failed() {
			return
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			t.Logf("round %d: killed between a rename and its Reopen", r)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if r < 2 && (len(data) == 0 || data[len(data)-1] == '\n') {
			line, err := review58hEvent(r, 9, 0).AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			cut := len(line) // round 1: cut just before the newline
			if r != 1 {
				cut = 1 + rng.IntN(len(line)-1)
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.Write(line[:cut])
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, terr := audit.QueryJSONL(path, audit.Filter{}); !errors.Is(terr, audit.ErrTornLine) {
				t.Errorf("round %d: a torn last line of %d bytes of %d not reported by QueryJSONL: %v",
					r, cut, len(line), terr)
			}
		}
	}
}

// TestReview58hJSONLKill9Buffered: a writer flooding a buffered JSONL sink
// (Write, Keep, and WriteDurable among them) is killed with SIGKILL at
// several moments, and started again on the same file each time. After
// each kill every event acknowledged durable (by WriteDurable, itself or a
// later one of its goroutine) reads back whole, with ReadJSONL, QueryJSONL
// and a plain json.Unmarshal of its line; no torn line reads as a record;
// a torn last line is reported; and a torn line the kill left is not glued
// to the restarted writer's first record.
func TestReview58hJSONLKill9Buffered(t *testing.T) { review58hJSONL(t, "jsonl-buffered") }

// TestReview58hJSONLKill9Durable: the same with a durable sink.
func TestReview58hJSONLKill9Durable(t *testing.T) { review58hJSONL(t, "jsonl-durable") }

// TestReview58hJSONLKill9Reopen: the same with a buffered sink whose file
// is renamed away and reopened every few milliseconds: the acknowledged
// events are in one of the files.
func TestReview58hJSONLKill9Reopen(t *testing.T) { review58hJSONL(t, "jsonl-reopen") }

// TestReview58hSQLiteKill9: the same flood on a SQLite sink, killed with
// SIGKILL and restarted on the same database four times: after each kill
// the database opens, passes its integrity check and holds every event
// WriteDurable committed, whole and once.
func TestReview58hSQLiteKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	path := filepath.Join(t.TempDir(), "audit.db")
	rng := rand.New(rand.NewPCG(58, 8))
	acked := map[string]bool{}
	for r := range 4 {
		delay := time.Duration(rng.IntN(150)) * time.Millisecond
		for _, id := range review58hRun(t, "sqlite", path, r, delay) {
			acked[id] = true
		}
		db, err := audit.OpenSQLite(path)
		if err != nil {
			t.Fatalf("round %d: the database does not open after SIGKILL: %v", r, err)
		}
		var ok string
		if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
			t.Errorf("round %d: integrity_check: %q, %v", r, ok, err)
		}
		evs, err := audit.QuerySQL(context.Background(), db, audit.SQLite, audit.Filter{})
		db.Close()
		if err != nil {
			t.Fatalf("round %d: QuerySQL: %v", r, err)
		}
		got := map[string]int{}
		for i := range evs {
			if err := review58hCheck(&evs[i]); err != nil {
				t.Errorf("round %d: %v", r, err)
			}
			got[evs[i].CorrelationID]++
		}
		for id, n := range got {
			if n > 1 {
				t.Errorf("round %d: event %s stored %d times", r, id, n)
			}
		}
		for id := range acked {
			if got[id] == 0 {
				t.Errorf("round %d: committed event %s missing after SIGKILL", r, id)
			}
		}
		t.Logf("round %d (kill %v after 40 acks): committed %d in all, rows %d", r, delay, len(acked), len(evs))
		if t.Failed() {
			return
		}
	}
}

// TestReview58hKill9WhileOpening: a writer killed while it opens its sink
// (creating the file, or the database and its schema, switching SQLite to
// WAL) or just after leaves what the next one opens: killed with SIGKILL
// 0 to 45 ms after it started, several times over on one path, then
// started again, it acknowledges writes as usual, and every durable one of
// those reads back.
func TestReview58hKill9WhileOpening(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, mode := range []string{"sqlite", "jsonl-durable"} {
		t.Run(mode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit")
			for r := range 10 {
				cmd := exec.Command(os.Args[0], "-test.run=^TestReview58hChild$")
				cmd.Env = append(os.Environ(), review58hChild+"="+mode, review58hChild+"_PATH="+path,
					review58hChild+"_ROUND="+strconv.Itoa(r))
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Duration(r*5) * time.Millisecond)
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				cmd.Wait()
			}
			acked := map[string]bool{}
			for _, id := range review58hRun(t, mode, path, 10, 20*time.Millisecond) {
				acked[id] = true
			}
			var evs []audit.Event
			if mode == "sqlite" {
				db, err := audit.OpenSQLite(path)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				if evs, err = audit.QuerySQL(context.Background(), db, audit.SQLite, audit.Filter{}); err != nil {
					t.Fatal(err)
				}
			} else {
				var err error
				evs, err = audit.QueryJSONL(path, audit.Filter{})
				// Torn lines the kills left, ended by the next writer,
				// read as corrupt lines: reported, never records.
				for _, e := range review58hUnjoin(err) {
					var le *audit.LineError
					if !errors.As(e, &le) {
						t.Errorf("QueryJSONL: %v", e)
					}
				}
			}
			got := map[string]bool{}
			for i := range evs {
				if err := review58hCheck(&evs[i]); err != nil {
					t.Error(err)
				}
				got[evs[i].CorrelationID] = true
			}
			for id := range acked {
				if !got[id] {
					t.Errorf("acknowledged event %s missing", id)
				}
			}
			t.Logf("acknowledged %d, read back %d", len(acked), len(evs))
		})
	}
}
