//go:build linux

package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// review37Read returns the records of the JSONL file at path, failing t on
// a line that does not read back.
func review37Read(t *testing.T, path string) []Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []Event
	for e, err := range ReadJSONL(f) {
		if err != nil {
			t.Fatalf("ReadJSONL(%s): %v", path, err)
		}
		got = append(got, e)
	}
	return got
}

// review37IDs returns the correlation ids of events, in order.
func review37IDs(events []Event) []string {
	ids := make([]string, 0, len(events))
	for _, e := range events {
		ids = append(ids, e.CorrelationID)
	}
	return ids
}

// review37Open opens a sink on path with opts, closed when t ends (within
// ten seconds: a test that failed may leave the sink locked).
func review37Open(t *testing.T, path string, opts *JSONLOptions) *JSONLSink {
	t.Helper()
	s, err := OpenJSONL(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { review36Within(t, "Close", func() { s.Close() }) })
	return s
}

// TestReview37KeepRefusesWhatCannotEncode: Keep returns ErrInvalidEvent at
// once for every event that cannot be encoded, here those at the edges of
// what encodes (a negative infinity, an offset of exactly a day, a year
// 9999 that is year 10000 in UTC), and the file gets no line for them. A
// Keep that took such an event for later would acknowledge it, then drop
// it when it fails to encode: an audit record lost with nobody told. The
// same edges one step inside encode, and are recorded.
func TestReview37KeepRefusesWhatCannotEncode(t *testing.T) {
	// A zone whose offset has seconds: AppendJSON writes its times in UTC.
	lmt := time.FixedZone("lmt", -(3600 + 30))
	for _, tc := range []struct {
		name   string
		mod    func(e *Event)
		refuse bool
	}{
		{name: "latency_minus_inf", mod: func(e *Event) { e.LatencyMS = math.Inf(-1) }, refuse: true},
		{name: "cost_minus_inf", mod: func(e *Event) { e.Cost = math.Inf(-1) }, refuse: true},
		{name: "cost_nan", mod: func(e *Event) { e.Cost = math.NaN() }, refuse: true},
		{name: "offset_plus_one_day", refuse: true, mod: func(e *Event) {
			e.Time = time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("east", 86400))
		}},
		{name: "offset_minus_one_day", refuse: true, mod: func(e *Event) {
			e.Time = time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("west", -86400))
		}},
		{name: "year_9999_is_10000_in_utc", refuse: true, mod: func(e *Event) {
			e.Time = time.Date(9999, 12, 31, 23, 30, 0, 0, lmt)
		}},
		{name: "offset_plus_one_day_less_a_minute", mod: func(e *Event) {
			e.Time = time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("east", 86400-60))
		}},
		{name: "offset_minus_one_day_less_a_minute", mod: func(e *Event) {
			e.Time = time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("west", -86400+60))
		}},
		{name: "year_9999_in_utc_too", mod: func(e *Event) {
			e.Time = time.Date(9999, 12, 31, 21, 30, 0, 0, lmt)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			s := review37Open(t, path, &JSONLOptions{FlushInterval: -1})
			e := review36Event("e")
			tc.mod(e)
			err := s.Keep(context.Background(), e, nil)
			if tc.refuse != errors.Is(err, ErrInvalidEvent) || !tc.refuse && err != nil {
				t.Fatalf("Keep(event at %v, latency %v, cost %v) = %v, want ErrInvalidEvent: %v",
					e.Time, e.LatencyMS, e.Cost, err, tc.refuse)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			want := []string{"e"}
			if tc.refuse {
				want = []string{}
			}
			if diff := cmp.Diff(want, review37IDs(review37Read(t, path))); diff != "" {
				t.Errorf("records after Keep and Close (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReview37KeepHashesArgs: Keep records in ArgsSHA256 the hash of the
// arguments it is given when the event has none, whether it holds the
// event for later (no Args) or writes it at once (Args set), for any
// arguments, even one byte long ("7"); it keeps a hash the event already
// has; and for the JSON literal null it records none, as ArgsSHA256
// returns "". The hash is how an auditor tells which arguments a call had
// without the record holding them.
func TestReview37KeepHashesArgs(t *testing.T) {
	const own = "0000000000000000000000000000000000000000000000000000000000000001"
	for _, tc := range []struct {
		name     string
		withArgs bool // e.Args set: Keep writes the event at once
		own      string
		args     string
		want     string
	}{
		{name: "kept_one_byte", args: "7", want: ArgsSHA256(json.RawMessage("7"))},
		{name: "kept_object", args: `{"b":1,"a":2}`, want: ArgsSHA256(json.RawMessage(`{"a":2,"b":1}`))},
		{name: "kept_null", args: "null", want: ""},
		{name: "kept_own_hash", own: own, args: "7", want: own},
		{name: "written_one_byte", withArgs: true, args: "7", want: ArgsSHA256(json.RawMessage("7"))},
		{name: "written_object", withArgs: true, args: `{"a":1}`, want: ArgsSHA256(json.RawMessage(`{"a":1}`))},
		{name: "written_null", withArgs: true, args: "null", want: ""},
		{name: "written_own_hash", withArgs: true, own: own, args: `{"a":1}`, want: own},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			s := review37Open(t, path, &JSONLOptions{FlushInterval: -1})
			e := review36Event("e")
			e.ArgsSHA256 = tc.own
			if tc.withArgs {
				e.Args = map[string]any{"a": 1.0}
			}
			if err := s.Keep(context.Background(), e, json.RawMessage(tc.args)); err != nil {
				t.Fatalf("Keep(args %s): %v", tc.args, err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			got := review37Read(t, path)
			if len(got) != 1 {
				t.Fatalf("%d records, want 1", len(got))
			}
			if got[0].ArgsSHA256 != tc.want {
				t.Errorf("Keep(event with ArgsSHA256 %q, args %s) recorded ArgsSHA256 %q, want %q",
					tc.own, tc.args, got[0].ArgsSHA256, tc.want)
			}
		})
	}
}

// TestReview37KeepBufferSizeReached: Keep counts a kept event at its
// estimated length (what keepable says) towards BufferSize, and writes the
// buffer through (without fsync) once that reaches BufferSize exactly, as
// Write does at the encoded length; one byte short, after a flush emptied
// the buffer too, it stays buffered. Writing through is how Keep reports a
// failing file when Write would, rather than acknowledge events it then
// loses.
func TestReview37KeepBufferSizeReached(t *testing.T) {
	size, ok := keepable(review36Event("e1"), nil)
	if !ok {
		t.Fatal("keepable(review36Event) = false; want a keepable event")
	}
	for _, tc := range []struct {
		name       string
		bufSize    int
		flushFirst bool
		want       JSONLStats
	}{
		{name: "reached", bufSize: size, want: JSONLStats{Events: 1, Writes: 1}},
		{name: "one_short", bufSize: size + 1, want: JSONLStats{Events: 1}},
		{name: "one_short_after_flush", bufSize: size + 1, flushFirst: true,
			want: JSONLStats{Events: 2, Writes: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			s := review37Open(t, path, &JSONLOptions{FlushInterval: -1, BufferSize: tc.bufSize})
			ctx := context.Background()
			if tc.flushFirst {
				if err := s.Keep(ctx, review36Event("e0"), nil); err != nil {
					t.Fatal(err)
				}
				if err := s.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Keep(ctx, review36Event("e1"), nil); err != nil {
				t.Fatal(err)
			}
			if got := s.Stats(); got != tc.want {
				t.Errorf("BufferSize %d (kept event %d bytes): Stats() after Keep = %+v, want %+v",
					tc.bufSize, size, got, tc.want)
			}
		})
	}
}

// TestReview37KeepHoldsArgsUpTo4KiB: Keep holds an event for later, with
// the arguments it is to hash, when they are at most 4 KiB long, and
// writes one with longer arguments at once, as documented: a sink must
// not hold arbitrarily large arguments of many calls in memory until its
// flusher gets to them. Either way the record gets the hash.
func TestReview37KeepHoldsArgsUpTo4KiB(t *testing.T) {
	for _, tc := range []struct {
		name     string
		size     int
		wantHeld int
	}{
		{name: "4096_bytes", size: 4 << 10, wantHeld: 1},
		{name: "4097_bytes", size: 4<<10 + 1, wantHeld: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			s := review37Open(t, path, &JSONLOptions{FlushInterval: -1})
			args := json.RawMessage(`{"a":"` + strings.Repeat("x", tc.size-8) + `"}`)
			if len(args) != tc.size {
				t.Fatalf("setup: args of %d bytes, want %d", len(args), tc.size)
			}
			if err := s.Keep(context.Background(), review36Event("e"), args); err != nil {
				t.Fatal(err)
			}
			s.mu.Lock()
			held := len(s.kept)
			s.mu.Unlock()
			if held != tc.wantHeld {
				t.Errorf("Keep(args of %d bytes): %d events held, want %d", tc.size, held, tc.wantHeld)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			got := review37Read(t, path)
			if len(got) != 1 || got[0].ArgsSHA256 != ArgsSHA256(args) {
				t.Errorf("records %+v, want one with ArgsSHA256 %s", got, ArgsSHA256(args))
			}
		})
	}
}

// review37ControlEvent is an event whose line is longer than keepable
// estimates (each control character of Detail takes six bytes), and the
// estimate and the length of its line.
func review37ControlEvent(t *testing.T, id string) (e *Event, est, line int) {
	t.Helper()
	e = review36Event(id)
	e.Detail = strings.Repeat("\x01", 100)
	est, ok := keepable(e, nil)
	if !ok {
		t.Fatal("keepable = false; want a keepable event")
	}
	b, err := e.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(b)+1 <= est {
		t.Fatalf("line %d bytes, estimate %d: want a line longer than its estimate", len(b)+1, est)
	}
	return e, est, len(b) + 1
}

// TestReview37KeepCallerEncodesAtMaxKept: on a sink with no background
// flusher, the Keep that brings the kept events to maxKept encodes them
// itself and, when their lines (longer than estimated) fill the buffer,
// exactly, writes it through as Write would, without fsync; on a file
// whose writes fail (/dev/full), that Keep returns the failure. Without
// that, a sink whose estimate runs low would hold ever more events, and
// acknowledge them while the file refuses every write.
func TestReview37KeepCallerEncodesAtMaxKept(t *testing.T) {
	_, est, line := review37ControlEvent(t, "k000")
	if maxKept*est >= maxKept*line {
		t.Fatalf("setup: estimate %d not below line %d", est, line)
	}
	for _, tc := range []struct {
		name string
		path string // "": a new regular file
	}{
		{name: "regular_file"},
		{name: "failing_file", path: "/dev/full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = filepath.Join(t.TempDir(), "audit.jsonl")
			}
			s := review37Open(t, path, &JSONLOptions{FlushInterval: -1, BufferSize: maxKept * line})
			ctx := context.Background()
			for i := range maxKept - 1 {
				e, _, _ := review37ControlEvent(t, fmt.Sprintf("k%03d", i))
				if err := s.Keep(ctx, e, nil); err != nil {
					t.Fatalf("Keep %d: %v", i, err)
				}
			}
			if got := s.Stats().Writes; got != 0 {
				t.Fatalf("Stats().Writes = %d after %d Keeps, want 0", got, maxKept-1)
			}
			e, _, _ := review37ControlEvent(t, "last")
			err := s.Keep(ctx, e, nil)
			if tc.path != "" {
				if err == nil {
					t.Errorf("Keep %d on %s = nil, want the failed write", maxKept, tc.path)
				}
				return
			}
			if err != nil {
				t.Fatalf("Keep %d: %v", maxKept, err)
			}
			if got, want := s.Stats(), (JSONLStats{Events: maxKept, Writes: 1}); got != want {
				t.Errorf("Stats() after Keep %d = %+v, want %+v", maxKept, got, want)
			}
			if got := len(review37Read(t, path)); got != maxKept {
				t.Errorf("the file holds %d records, want %d", got, maxKept)
			}
		})
	}
}

// TestReview37KeepFlushCutByContext: a Keep that writes the buffer through
// (the buffer full, or maxKept events kept) while another flush holds the
// file, with its ctx done, returns nil: its event is taken and reaches the
// file with the next flush, and an error would make a caller that retries
// record it twice.
func TestReview37KeepFlushCutByContext(t *testing.T) {
	size, _ := keepable(review36Event("e000"), nil)
	_, est, line := review37ControlEvent(t, "e000")
	for _, tc := range []struct {
		name    string
		bufSize int
		events  int
	}{
		{name: "buffer_full", bufSize: size, events: 1},
		{name: "max_kept", bufSize: maxKept * line, events: maxKept},
	} {
		if tc.events > 1 && tc.events*est >= tc.bufSize {
			t.Fatalf("setup: the estimates of %d events fill the buffer of %d", tc.events, tc.bufSize)
		}
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			s := review37Open(t, path, &JSONLOptions{FlushInterval: -1, BufferSize: tc.bufSize})
			var want []string
			for i := range tc.events {
				e, _, _ := review37ControlEvent(t, fmt.Sprintf("e%03d", i))
				if tc.events == 1 {
					e = review36Event("e000")
				}
				want = append(want, e.CorrelationID)
				ctx := context.Background()
				last := i == tc.events-1
				if last {
					c, cancel := context.WithCancel(ctx)
					cancel()
					ctx = c
					s.ioSem <- struct{}{} // another flush holds the file
				}
				err := s.Keep(ctx, e, nil)
				if last {
					<-s.ioSem
				}
				if err != nil {
					t.Fatalf("Keep %d (ctx done: %v): %v, want nil", i, last, err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, review37IDs(review37Read(t, path))); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReview37FlusherWritesOnTick: the background flusher writes what is
// buffered, a written line or a kept event, on its tick, and does not
// fsync it (FlushInterval says "without fsync"; durability is WriteDurable's
// and Sync's): a buffered sink's lines reach the file within FlushInterval
// with nothing calling Flush.
func TestReview37FlusherWritesOnTick(t *testing.T) {
	for _, tc := range []struct {
		name string
		add  func(s *JSONLSink, e *Event) error
	}{
		{name: "written", add: func(s *JSONLSink, e *Event) error { return s.Write(context.Background(), e) }},
		{name: "kept", add: func(s *JSONLSink, e *Event) error { return s.Keep(context.Background(), e, nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			synctest.Test(t, func(t *testing.T) {
				const every = 100 * time.Millisecond
				s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: every})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if err := tc.add(s, review36Event("e")); err != nil {
					t.Fatal(err)
				}
				time.Sleep(every / 2)
				synctest.Wait()
				review36WantFile(t, path, "")
				time.Sleep(every)
				synctest.Wait()
				review36WantFile(t, path, review36Line(t, "e"))
				if got, want := s.Stats(), (JSONLStats{Events: 1, Writes: 1}); got != want {
					t.Errorf("Stats() after the tick = %+v, want %+v", got, want)
				}
			})
		})
	}
}

// TestReview37KeepWakesFlusher: a buffered sink with a flusher holds kept
// events as they are until keptWake of them wait; the Keep that makes
// keptWake wakes the flusher, which encodes them (without writing: the
// buffer is not full), and they reach the file on the next tick. The
// flusher so takes the encoding and hashing off the callers' path, and
// the events (with what they reference) are not held for long.
func TestReview37KeepWakesFlusher(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	synctest.Test(t, func(t *testing.T) {
		const every = 100 * time.Millisecond
		s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: every})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		held := func() (kept, lines int) {
			s.mu.Lock()
			defer s.mu.Unlock()
			return len(s.kept), strings.Count(string(s.buf), "\n")
		}
		for i := range keptWake {
			if err := s.Keep(context.Background(), review36Event(fmt.Sprint(i)), nil); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			kept, lines := held()
			want := [2]int{i + 1, 0}
			if i+1 == keptWake {
				want = [2]int{0, keptWake}
			}
			if got := [2]int{kept, lines}; got != want {
				t.Fatalf("after Keep %d: %d events kept, %d lines encoded; want %v", i+1, kept, lines, want)
			}
		}
		if got := s.Stats().Writes; got != 0 {
			t.Errorf("Stats().Writes = %d before the tick, want 0", got)
		}
		time.Sleep(every)
		synctest.Wait()
		if got := len(review37Read(t, path)); got != keptWake {
			t.Errorf("after the tick the file holds %d records, want %d", got, keptWake)
		}
	})
}

// review37Add writes e to s with Keep (keep) or Write, failing the test
// on an error.
func review37Add(t *testing.T, s *JSONLSink, e *Event, keep bool) {
	t.Helper()
	var err error
	if keep {
		err = s.Keep(context.Background(), e, nil)
	} else {
		err = s.Write(context.Background(), e)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestReview37NULFirstInField: a NUL byte that is the first byte of a text
// field is recorded as U+FFFD, by Write and by Keep, as one anywhere else
// in it: a SQLSink stores it so, and the same event must read back the same
// from every sink.
func TestReview37NULFirstInField(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep bool
	}{
		{name: "write"},
		{name: "keep", keep: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			s := review37Open(t, path, &JSONLOptions{FlushInterval: -1})
			e := review36Event("\x00id")
			e.Detail = "\x00detail"
			review37Add(t, s, e, tc.keep)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			got := review37Read(t, path)
			if len(got) != 1 {
				t.Fatalf("%d records, want 1", len(got))
			}
			want := [2]string{"\uFFFDid", "\uFFFDdetail"}
			if g := [2]string{got[0].CorrelationID, got[0].Detail}; g != want {
				t.Errorf("recorded correlation id and detail %q, want %q", g, want)
			}
		})
	}
}

// TestReview37LineIsAppendJSONWithoutNUL: an event with no NUL byte in its
// text, even one with invalid UTF-8, is recorded byte for byte as
// Event.AppendJSON encodes it (each invalid byte as the escape \ufffd), by
// Write and by Keep, as JSONLSink documents: a tool that checks a record
// by encoding the event again gets the same bytes.
func TestReview37LineIsAppendJSONWithoutNUL(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep bool
	}{
		{name: "write"},
		{name: "keep", keep: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			s := review37Open(t, path, &JSONLOptions{FlushInterval: -1})
			e := review36Event("e")
			e.Tool = "re\xfffund"
			line, err := e.AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			review37Add(t, s, e, tc.keep)
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			review36WantFile(t, path, string(line)+"\n")
		})
	}
}

// TestReview37OpenDirectoryFails: when OpenJSONL creates the file, and
// the open of its directory, to fsync the new entry, fails, OpenJSONL
// returns the error and no sink (a sink on a file whose directory entry
// may vanish in a crash would pass its records for safe), and closes the
// file. strace fails the open of the directory.
func TestReview37OpenDirectoryFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	if got := review36RunChild(t, "openfail", path, review36Strace(t, "openat", "EIO", dir)...); got != "ok" {
		t.Errorf("child (the open of %s fails): %s", dir, got)
	}
}

// TestReview37SQLiteEmptyFlushCommitsNothing: a Flush of a SQLSink with
// nothing queued commits no transaction, and Stats counts none: Batches
// counts the transactions that committed rows, which an operator reads
// to see the writer's batching, and an idle sink that a health check
// flushes must not pass for a busy one.
func TestReview37SQLiteEmptyFlushCommitsNothing(t *testing.T) {
	db, err := OpenSQLite(filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	s, err := NewSQL(ctx, db, SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := s.Stats(), (SQLStats{}); got != want {
		t.Errorf("Stats() after an empty Flush = %+v, want %+v", got, want)
	}
	if err := s.Write(ctx, review36Event("e")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := s.Stats(), (SQLStats{Rows: 1, Batches: 1}); got != want {
		t.Errorf("Stats() after a Write and two Flushes = %+v, want %+v", got, want)
	}
}
