package audit_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/audit/audittest"
)

func readAll(t *testing.T, path string) (events []audit.Event, lineErrs []*audit.LineError) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for ev, err := range audit.ReadJSONL(f) {
		if err != nil {
			var le *audit.LineError
			if !errors.As(err, &le) {
				t.Fatalf("ReadJSONL: %v", err)
			}
			lineErrs = append(lineErrs, le)
			continue
		}
		events = append(events, ev)
	}
	return events, lineErrs
}

func jsonlHarness(opts *audit.JSONLOptions) func(t *testing.T) audittest.Harness {
	return func(t *testing.T) audittest.Harness {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		s, err := audit.OpenJSONL(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return audittest.Harness{Sink: s, Read: func(ctx context.Context) ([]audit.Event, error) {
			if err := s.Flush(); err != nil {
				return nil, err
			}
			evs, errs := readAll(t, path)
			if len(errs) > 0 {
				return evs, errs[0]
			}
			return evs, nil
		}}
	}
}

func TestJSONLConformance(t *testing.T) {
	t.Run("buffered", func(t *testing.T) { audittest.Run(t, jsonlHarness(nil)) })
	t.Run("durable", func(t *testing.T) { audittest.Run(t, jsonlHarness(&audit.JSONLOptions{Durable: true})) })
	t.Run("tiny_buffer", func(t *testing.T) {
		audittest.Run(t, jsonlHarness(&audit.JSONLOptions{BufferSize: 1, FlushInterval: -1}))
	})
}

func event(id string, i int) *audit.Event {
	return &audit.Event{
		Time: time.Date(2026, 7, 28, 0, 0, 0, i, time.UTC), CorrelationID: id, SessionID: "s",
		Subject: "alice", Tool: "search_docs", Class: "read", Phase: audit.PhaseOutcome, Allowed: true,
		LatencyMS: 0.5, ArgsSHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	}
}

// TestJSONLConcurrentWriters: 16 goroutines x 10,000 events, nothing lost,
// nothing interleaved.
func TestJSONLConcurrentWriters(t *testing.T) {
	const writers, each = 16, 10000
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := audit.OpenJSONL(path, &audit.JSONLOptions{BufferSize: 8 << 10, FlushInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			e := event("", 0)
			for i := range each {
				e.CorrelationID = fmt.Sprintf("w%02d-%05d", w, i)
				e.Detail = strings.Repeat(string(rune('a'+w)), i%200) // lines of varying length
				if err := s.Write(ctx, e); err != nil {
					t.Errorf("Write: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	evs, lineErrs := readAll(t, path)
	if len(lineErrs) > 0 {
		t.Fatalf("%d corrupt lines, first: %v", len(lineErrs), lineErrs[0])
	}
	seen := make(map[string]bool, writers*each)
	for _, e := range evs {
		var w, i int
		if _, err := fmt.Sscanf(e.CorrelationID, "w%02d-%05d", &w, &i); err != nil {
			t.Fatalf("unexpected correlation id %q", e.CorrelationID)
		}
		if want := strings.Repeat(string(rune('a'+w)), i%200); e.Detail != want {
			t.Fatalf("event %s: detail of another event (len %d)", e.CorrelationID, len(e.Detail))
		}
		if seen[e.CorrelationID] {
			t.Fatalf("event %s recorded twice", e.CorrelationID)
		}
		seen[e.CorrelationID] = true
	}
	if len(seen) != writers*each {
		t.Errorf("recorded %d distinct events, want %d", len(seen), writers*each)
	}
	if st := s.Stats(); st.Events != writers*each {
		t.Errorf("Stats().Events = %d, want %d", st.Events, writers*each)
	}
}

// TestJSONLDurableGroupCommit: concurrent durable writers share fsyncs and
// every acknowledged event is in the file without Flush or Close.
func TestJSONLDurableGroupCommit(t *testing.T) {
	const writers, each = 16, 50
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := audit.OpenJSONL(path, &audit.JSONLOptions{Durable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := s.Write(context.Background(), event(fmt.Sprintf("w%d-%d", w, i), i)); err != nil {
					t.Errorf("Write: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	evs, lineErrs := readAll(t, path) // no Flush: durable writes are already in the file
	if len(evs) != writers*each || len(lineErrs) != 0 {
		t.Errorf("file holds %d events and %d bad lines, want %d and 0", len(evs), len(lineErrs), writers*each)
	}
	st := s.Stats()
	if st.Syncs == 0 || st.Syncs > st.Events {
		t.Errorf("Stats = %+v: want between 1 and %d fsyncs", st, st.Events)
	}
	t.Logf("%d events, %d fsyncs, %d writes", st.Events, st.Syncs, st.Writes)
}

func TestJSONLWriteDurableOnBufferedSink(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := audit.OpenJSONL(path, &audit.JSONLOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.Write(ctx, event("buffered", 1)); err != nil {
		t.Fatal(err)
	}
	if evs, _ := readAll(t, path); len(evs) != 0 {
		t.Fatalf("buffered event reached the file before any flush: %v", evs)
	}
	intent := event("intent", 2)
	intent.Phase, intent.Class = audit.PhaseIntent, "write"
	if err := audit.WriteDurable(ctx, s, intent); err != nil {
		t.Fatal(err)
	}
	evs, _ := readAll(t, path)
	var ids []string
	for _, e := range evs {
		ids = append(ids, e.CorrelationID)
	}
	if diff := cmp.Diff([]string{"buffered", "intent"}, ids); diff != "" {
		t.Errorf("after WriteDurable the file holds (-want +got):\n%s", diff)
	}
	if st := s.Stats(); st.Syncs != 1 {
		t.Errorf("Stats().Syncs = %d, want 1", st.Syncs)
	}
}

func TestJSONLRejectsInvalidEvents(t *testing.T) {
	s, err := audit.OpenJSONL(filepath.Join(t.TempDir(), "a.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ok := event("c", 1)
	tests := []struct {
		name string
		mod  func(e *audit.Event)
	}{
		{"no_correlation_id", func(e *audit.Event) { e.CorrelationID = "" }},
		{"bad_phase", func(e *audit.Event) { e.Phase = "later" }},
		{"zero_time", func(e *audit.Event) { e.Time = time.Time{} }},
		{"nan_latency", func(e *audit.Event) { e.LatencyMS = 0 / zero() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := *ok
			tt.mod(&e)
			if err := s.Write(context.Background(), &e); !errors.Is(err, audit.ErrInvalidEvent) {
				t.Errorf("Write = %v, want ErrInvalidEvent", err)
			}
		})
	}
}

func zero() float64 { return 0 }

func TestReadJSONLReportsCornerCases(t *testing.T) {
	good := func(id string) string {
		b, err := event(id, 1).AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	g1 := good("one")
	content := g1 + "\n" + // 1: ok
		g1[:len(g1)/2] + "\n" + // 2: torn then newline (crash then reopen)
		"not json\n" + // 3
		"\n" + // 4: blank, skipped
		`{"correlation_id":"x"}` + "\n" + // 5: valid JSON, not a record
		good("two") + " {}\n" + // 6: trailing data
		good("three") + "\r\n" + // 7: CRLF accepted
		good("four") // 8: no final newline: torn
	type step struct {
		ID   string
		Line int
	}
	var got []step
	for ev, err := range audit.ReadJSONL(strings.NewReader(content)) {
		if err != nil {
			var le *audit.LineError
			if !errors.As(err, &le) {
				t.Fatalf("non-line error %v", err)
			}
			got = append(got, step{Line: le.Line})
			continue
		}
		got = append(got, step{ID: ev.CorrelationID})
	}
	want := []step{{ID: "one"}, {Line: 2}, {Line: 3}, {Line: 5}, {Line: 6}, {ID: "three"}, {Line: 8}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadJSONL sequence (-want +got):\n%s", diff)
	}
}

// TestReadJSONLNeverYieldsATornRecord cuts a valid file at every byte offset
// of its last two lines.
func TestReadJSONLNeverYieldsATornRecord(t *testing.T) {
	var full []byte
	for i := range 3 {
		b, _ := event(fmt.Sprintf("e%d", i), i).AppendJSON(nil)
		full = append(append(full, b...), '\n')
	}
	firstEnd := strings.IndexByte(string(full), '\n') + 1
	for cut := firstEnd; cut <= len(full); cut++ {
		n := 0
		for ev, err := range audit.ReadJSONL(strings.NewReader(string(full[:cut]))) {
			if err != nil {
				continue
			}
			n++
			if ev.Subject != "alice" || ev.ArgsSHA256 == "" {
				t.Fatalf("cut at %d: yielded a partial event %+v", cut, ev)
			}
		}
		if complete := strings.Count(string(full[:cut]), "\n"); n != complete {
			t.Fatalf("cut at %d: %d events, want %d (complete lines)", cut, n, complete)
		}
	}
}

func TestReadJSONLLongLine(t *testing.T) {
	e := event("big", 1)
	e.Detail = strings.Repeat("x", audit.MaxLineSize)
	b, _ := e.AppendJSON(nil)
	small, _ := event("small", 2).AppendJSON(nil)
	content := string(b) + "\n" + string(small) + "\n"
	var ids []string
	var errs int
	for ev, err := range audit.ReadJSONL(strings.NewReader(content)) {
		if err != nil {
			errs++
			continue
		}
		ids = append(ids, ev.CorrelationID)
	}
	if errs != 1 || len(ids) != 1 || ids[0] != "small" {
		t.Errorf("got ids %v and %d errors, want [small] and 1", ids, errs)
	}
}

func TestOpenJSONLTerminatesTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	b, _ := event("before", 1).AppendJSON(nil)
	if err := os.WriteFile(path, append(append(b, '\n'), b[:20]...), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := audit.OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), event("after", 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	evs, lineErrs := readAll(t, path)
	if len(evs) != 2 || evs[0].CorrelationID != "before" || evs[1].CorrelationID != "after" {
		t.Errorf("events %v, want before and after", evs)
	}
	if len(lineErrs) != 1 || lineErrs[0].Line != 2 {
		t.Errorf("line errors %v, want the torn line 2", lineErrs)
	}
}

func TestQueryJSONL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := audit.OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range sessionEvents() {
		if err := s.Write(context.Background(), &e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("garbage\n")
	f.Close()
	testQueries(t, func(f audit.Filter) ([]audit.Event, error) {
		evs, err := audit.QueryJSONL(path, f)
		var le *audit.LineError
		if f.Limit == 0 && (!errors.As(err, &le) || le.Line != len(sessionEvents())+1) {
			t.Errorf("QueryJSONL error = %v, want the garbage line", err)
		}
		return evs, nil
	})
}

const helperEnv = "MCPGUARD_AUDIT_CRASH_FILE"

// TestHelperProcess is the child of TestJSONLCrashSafety: it writes durable
// events from four goroutines and prints each correlation id once Write
// acknowledged it, until it is killed.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		return // only meaningful as TestJSONLCrashSafety's child process
	}
	s, err := audit.OpenJSONL(path, &audit.JSONLOptions{Durable: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	for w := range 4 {
		go func() {
			for i := 0; ; i++ {
				e := event(fmt.Sprintf("w%d-%d", w, i), i)
				e.Detail = strings.Repeat("d", 3000+i%5000) // multi-page lines make torn writes likely
				if err := s.Write(context.Background(), e); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(3)
				}
				mu.Lock()
				fmt.Fprintln(out, e.CorrelationID)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	select {}
}

// TestJSONLCrashSafety kills a durable writer with SIGKILL mid-stream: every
// complete line parses, no torn line comes back as an event, and every event
// acknowledged before the kill is in the file.
func TestJSONLCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	path := filepath.Join(t.TempDir(), "crash.jsonl")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
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
	for len(acked) < 300 && sc.Scan() {
		acked[sc.Text()] = true
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Whatever the child printed before dying was acknowledged too.
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "w") {
			acked[line] = true
		}
	}
	cmd.Wait()
	if len(acked) < 300 {
		t.Fatalf("child acknowledged only %d events before exiting", len(acked))
	}
	evs, lineErrs := readAll(t, path)
	got := map[string]bool{}
	for _, e := range evs {
		var w, i int
		if _, err := fmt.Sscanf(e.CorrelationID, "w%d-%d", &w, &i); err != nil || len(e.Detail) != 3000+i%5000 {
			t.Fatalf("event %q is not one the child wrote whole", e.CorrelationID)
		}
		got[e.CorrelationID] = true
	}
	for id := range acked {
		if !got[id] {
			t.Errorf("acknowledged event %s missing after the crash", id)
		}
	}
	for _, le := range lineErrs {
		if !errors.Is(le, audit.ErrTornLine) {
			t.Errorf("bad line other than a torn tail: %v", le)
		}
	}
	t.Logf("acknowledged %d, in file %d, torn lines %d", len(acked), len(evs), len(lineErrs))
}
