package audit_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"

	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/audit/audittest"
)

// keepSink writes through Keep: a copy of each event is handed over, as the
// guard hands over its own.
type keepSink struct{ s *audit.JSONLSink }

func (k keepSink) Write(ctx context.Context, e *audit.Event) error {
	c := *e
	c.Roles = slices.Clone(e.Roles)
	c.Args = maps.Clone(e.Args)
	return k.s.Keep(ctx, &c, nil)
}
func (k keepSink) WriteDurable(ctx context.Context, e *audit.Event) error {
	return k.s.WriteDurable(ctx, e)
}
func (k keepSink) Close() error { return k.s.Close() }

var _ audit.Keeper = (*audit.JSONLSink)(nil)

// TestJSONLKeepConformance runs the sink conformance checks with every
// plain write made through Keep.
func TestJSONLKeepConformance(t *testing.T) {
	for name, opts := range map[string]*audit.JSONLOptions{
		"buffered":    nil,
		"durable":     {Durable: true},
		"no_flusher":  {FlushInterval: -1},
		"tiny_buffer": {BufferSize: 1, FlushInterval: -1},
	} {
		t.Run(name, func(t *testing.T) {
			audittest.Run(t, func(t *testing.T) audittest.Harness {
				h := jsonlHarness(opts)(t)
				h.Sink = keepSink{h.Sink.(*audit.JSONLSink)}
				return h
			})
		})
	}
}

// TestJSONLKeepOrderAndHash checks that kept events reach the file in the
// order they were handed over, among events written by Write and
// WriteDurable, that a kept event's ArgsSHA256 is the hash of its args (and
// a set one is kept), and that a durable write makes the kept events before
// it durable too.
func TestJSONLKeepOrderAndHash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	s, err := audit.OpenJSONL(path, &audit.JSONLOptions{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	args := json.RawMessage(`{"b": 2, "a": "x"}`)
	var want []audit.Event
	for i := range 10 {
		e := event(fmt.Sprintf("e%02d", i), i)
		var err error
		switch i % 4 {
		case 0:
			err = s.Write(ctx, e)
		case 1:
			e.ArgsSHA256 = ""
			err = s.Keep(ctx, e, args)
			e = event(e.CorrelationID, i)
			e.ArgsSHA256 = audit.ArgsSHA256(args)
		case 2:
			err = s.Keep(ctx, e, args) // its own hash stays
			e = event(e.CorrelationID, i)
		case 3:
			e.ArgsSHA256 = ""
			err = s.Keep(ctx, e, nil)
			e = event(e.CorrelationID, i)
			e.ArgsSHA256 = ""
		}
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		want = append(want, *e)
	}
	last := event("durable", 99)
	if err := s.WriteDurable(ctx, last); err != nil {
		t.Fatal(err)
	}
	want = append(want, *last)
	got, lineErrs := readAll(t, path) // no Flush: the durable write wrote them
	if len(lineErrs) > 0 {
		t.Fatal(lineErrs[0])
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("file (-want +got):\n%s", diff)
	}
	if st := s.Stats(); st.Events != 11 {
		t.Errorf("Stats().Events = %d, want 11", st.Events)
	}
}

// TestJSONLKeepRefusesAtOnce checks that Keep returns every error Write
// would: an event that cannot be encoded is refused at once, not dropped
// later, and a closed sink refuses.
func TestJSONLKeepRefusesAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	s, err := audit.OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mod  func(e *audit.Event)
	}{
		{"no_correlation_id", func(e *audit.Event) { e.CorrelationID = "" }},
		{"bad_phase", func(e *audit.Event) { e.Phase = "later" }},
		{"zero_time", func(e *audit.Event) { e.Time = time.Time{} }},
		{"nan_latency", func(e *audit.Event) { e.LatencyMS = math.NaN() }},
		{"inf_cost", func(e *audit.Event) { e.Cost = math.Inf(1) }},
		{"year_10000", func(e *audit.Event) { e.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"offset_over_a_day", func(e *audit.Event) {
			e.Time = time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 25*3600))
		}},
		{"args_nan", func(e *audit.Event) { e.Args = map[string]any{"x": math.NaN()} }},
		{"line_too_long", func(e *audit.Event) { e.Detail = string(make([]byte, audit.MaxLineSize)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := event("c", 1)
			tc.mod(e)
			if err := s.Keep(context.Background(), e, nil); !errors.Is(err, audit.ErrInvalidEvent) {
				t.Errorf("Keep = %v, want ErrInvalidEvent", err)
			}
		})
	}
	// Events near the limits that do encode are kept and recorded.
	near := []*audit.Event{event("y9999", 1), event("control", 2)}
	near[0].Time = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	near[1].Detail = "\x00\x01\"\\"
	for _, e := range near {
		if err := s.Keep(context.Background(), e, nil); err != nil {
			t.Fatalf("Keep(%s) = %v", e.CorrelationID, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got, errs := readAll(t, path); len(got) != 2 || len(errs) != 0 {
		t.Fatalf("recorded %d events (%v), want 2", len(got), errs)
	}
	if err := s.Keep(context.Background(), event("late", 1), nil); !errors.Is(err, audit.ErrClosed) {
		t.Errorf("Keep after Close = %v, want ErrClosed", err)
	}
}

// TestJSONLKeepConcurrent hands events over from many goroutines, with
// Write and WriteDurable among them, on a sink whose flusher runs often and
// on one without a flusher, and checks that every event is recorded once,
// whole, with its hash, in each writer's order.
func TestJSONLKeepConcurrent(t *testing.T) {
	for name, opts := range map[string]*audit.JSONLOptions{
		"flusher":    {BufferSize: 4 << 10, FlushInterval: time.Millisecond},
		"no_flusher": {BufferSize: 4 << 10, FlushInterval: -1},
	} {
		t.Run(name, func(t *testing.T) {
			const writers, each = 8, 3000
			path := filepath.Join(t.TempDir(), "a.jsonl")
			s, err := audit.OpenJSONL(path, opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := range each {
						e := event(fmt.Sprintf("w%d-%05d", w, i), i)
						e.ArgsSHA256 = ""
						var err error
						switch {
						case i%500 == 499:
							err = s.WriteDurable(ctx, e)
						case i%7 == 0:
							err = s.Write(ctx, e)
						default:
							err = s.Keep(ctx, e, json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)))
						}
						if err != nil {
							t.Errorf("writer %d event %d: %v", w, i, err)
							return
						}
					}
				})
			}
			wg.Wait()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			got, lineErrs := readAll(t, path)
			if len(lineErrs) > 0 {
				t.Fatalf("%d corrupt lines, first %v", len(lineErrs), lineErrs[0])
			}
			if len(got) != writers*each {
				t.Fatalf("recorded %d events, want %d", len(got), writers*each)
			}
			next := make([]int, writers)
			for _, e := range got {
				var w, i int
				if _, err := fmt.Sscanf(e.CorrelationID, "w%d-%05d", &w, &i); err != nil {
					t.Fatalf("correlation id %q", e.CorrelationID)
				}
				if i != next[w] {
					t.Fatalf("writer %d: event %d recorded after %d", w, i, next[w]-1)
				}
				next[w]++
				want := ""
				if i%500 != 499 && i%7 != 0 {
					want = audit.ArgsSHA256(json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)))
				}
				if e.ArgsSHA256 != want {
					t.Fatalf("event %s: hash %q, want %q", e.CorrelationID, e.ArgsSHA256, want)
				}
			}
		})
	}
}

// TestJSONLKeepReachesFileOnTicks checks that the background flusher
// writes kept events on its own: nothing calls Flush.
func TestJSONLKeepReachesFileOnTicks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	s, err := audit.OpenJSONL(path, &audit.JSONLOptions{FlushInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 3 {
		if err := s.Keep(context.Background(), event(fmt.Sprint(i), i), nil); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _ := readAll(t, path)
		if len(got) == 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10s the file holds %d of 3 kept events", len(got))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var _ io.Closer = keepSink{}

func TestJSONLKeeper(t *testing.T) {
	for name, opts := range map[string]*audit.JSONLOptions{
		"buffered":    nil,
		"durable":     {Durable: true},
		"tiny_buffer": {BufferSize: 1, FlushInterval: -1},
	} {
		t.Run(name, func(t *testing.T) { audittest.RunKeeper(t, jsonlHarness(opts)) })
	}
}

func TestSQLiteKeeper(t *testing.T) {
	audittest.RunKeeper(t, sqlHarness(func(t *testing.T) *sql.DB { return openSQLite(t) }, audit.SQLite))
}
