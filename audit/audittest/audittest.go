package audittest

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
)

// Harness is one fresh sink under test and a way to read back what it
// recorded.
type Harness struct {
	// Sink is the sink under test.
	Sink audit.Sink
	// Read returns every event the sink has recorded so far, in any order.
	// It may flush the sink first; it must not close it.
	Read func(ctx context.Context) ([]audit.Event, error)
}

// Run runs the conformance tests as subtests of t. newHarness is called once
// per subtest and must return a new, empty sink; it should register its own
// cleanup (closing the sink) with t.Cleanup.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, h Harness)
	}{
		{"round_trip", testRoundTrip},
		{"does_not_retain", testNotRetained},
		{"concurrent_writers", testConcurrent},
		{"durable", testDurable},
		{"closed", testClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			if _, ok := h.Sink.(io.Closer); !ok && tt.name == "closed" {
				t.Fatal("a sink must implement io.Closer: Close flushes what it buffers and makes later writes fail")
			}
			tt.run(t, h)
		})
	}
}

// Events returns the events every sink must round-trip: one with every field
// set, with characters that need escaping, and a minimal one. Numbers in Args
// are float64 and nested values []any and map[string]any, as JSON decoding
// produces them.
func Events() []audit.Event {
	base := time.Date(2026, 7, 28, 12, 34, 56, 123456789, time.UTC)
	return []audit.Event{
		{
			Time: base, CorrelationID: "c-full", SessionID: "s-1", Subject: "alice",
			Roles: []string{"engineering", "admin"}, Tool: "create_ticket", Class: "write",
			Phase: audit.PhaseOutcome, Allowed: true, DryRun: true, Code: "", Detail: "DRYRUN-1234",
			LatencyMS: 1.25, ArgsSHA256: strings.Repeat("ab", 32), Cost: 5,
			ProtocolVersion: "2026-07-28", ClientName: "claude", RequestID: "0193a1b2c3d4-5e6f708192a3",
			ParentID: "0193a1b2c3d3-00000000000f",
			Args: map[string]any{"title": "Broken <build> & \"CI\"", "n": 3.5, "tags": []any{"a", true, nil},
				"nested": map[string]any{"k": "v"}},
		},
		{
			Time: base.Add(time.Millisecond), CorrelationID: "c-denied", SessionID: "s-1", Subject: "bob",
			Roles: []string{"sales"}, Tool: "admin_refund", Class: "write", Phase: audit.PhaseOutcome,
			Code: "FORBIDDEN", Detail: "role\tdoes\nnot allow <admin_*> & \u2028\u2029 \x01\x1f\x7f é 日本 🎉 \\ \"",
			LatencyMS: 0.001, ProtocolVersion: "2025-11-25",
		},
		{
			Time: base.Add(2 * time.Millisecond).In(time.FixedZone("IST", 5*3600+1800)), CorrelationID: "c-intent",
			Subject: "alice", Tool: "create_ticket", Class: "write", Phase: audit.PhaseIntent, Allowed: true,
			ArgsSHA256: strings.Repeat("0f", 32), Cost: 1e-7,
		},
		{Time: base.Add(3 * time.Millisecond), CorrelationID: "c-min", Phase: audit.PhaseOutcome},
	}
}

func byCorrelation(a, b audit.Event) int { return strings.Compare(a.CorrelationID, b.CorrelationID) }

func read(t *testing.T, h Harness) []audit.Event {
	t.Helper()
	got, err := h.Read(context.Background())
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	slices.SortStableFunc(got, byCorrelation)
	return got
}

func testRoundTrip(t *testing.T, h Harness) {
	ctx := context.Background()
	want := Events()
	for i := range want {
		if err := h.Sink.Write(ctx, &want[i]); err != nil {
			t.Fatalf("Write(%s): %v", want[i].CorrelationID, err)
		}
	}
	got := read(t, h)
	want = Events()
	slices.SortStableFunc(want, byCorrelation)
	// Times compare with time.Time.Equal (cmp uses the Equal method): the
	// location need not survive, the instant must.
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded events mismatch (-want +got):\n%s", diff)
	}
}

func testNotRetained(t *testing.T, h Harness) {
	ctx := context.Background()
	e := Events()[0]
	if err := h.Sink.Write(ctx, &e); err != nil {
		t.Fatalf("Write: %v", err)
	}
	// Mutate everything the sink could have kept a reference to.
	e.Roles[0] = "MUTATED"
	e.Args["title"] = "MUTATED"
	e.Args["nested"].(map[string]any)["k"] = "MUTATED"
	e.Args["tags"].([]any)[0] = "MUTATED"
	e.Detail = "MUTATED"
	got := read(t, h)
	want := []audit.Event{Events()[0]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sink retained the event (-want +got):\n%s", diff)
	}
}

func testConcurrent(t *testing.T, h Harness) {
	const writers, each = 8, 250
	ctx := context.Background()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				e := audit.Event{
					Time: base.Add(time.Duration(i) * time.Microsecond), CorrelationID: fmt.Sprintf("w%d-%d", w, i),
					SessionID: fmt.Sprintf("s%d", w), Subject: "u", Tool: "t", Phase: audit.PhaseOutcome,
					Allowed: i%2 == 0, Detail: strings.Repeat("x", i%97), LatencyMS: float64(i),
				}
				if err := h.Sink.Write(ctx, &e); err != nil {
					errs <- fmt.Errorf("Write(%s): %w", e.CorrelationID, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := read(t, h)
	seen := map[string]int{}
	for _, e := range got {
		seen[e.CorrelationID]++
		var w, i int
		if _, err := fmt.Sscanf(e.CorrelationID, "w%d-%d", &w, &i); err != nil {
			t.Fatalf("unexpected event %q", e.CorrelationID)
		}
		if e.SessionID != fmt.Sprintf("s%d", w) || e.Detail != strings.Repeat("x", i%97) || e.LatencyMS != float64(i) {
			t.Errorf("event %s has fields of another event: %+v", e.CorrelationID, e)
		}
	}
	for w := range writers {
		for i := range each {
			id := fmt.Sprintf("w%d-%d", w, i)
			if seen[id] != 1 {
				t.Errorf("event %s recorded %d times, want 1", id, seen[id])
			}
		}
	}
	if len(got) != writers*each {
		t.Errorf("recorded %d events, want %d", len(got), writers*each)
	}
}

func testDurable(t *testing.T, h Harness) {
	ctx := context.Background()
	e := Events()[2]
	if err := audit.WriteDurable(ctx, h.Sink, &e); err != nil {
		t.Fatalf("WriteDurable: %v", err)
	}
	got := read(t, h)
	if diff := cmp.Diff([]audit.Event{Events()[2]}, got); diff != "" {
		t.Errorf("durable event mismatch (-want +got):\n%s", diff)
	}
}

func testClosed(t *testing.T, h Harness) {
	c := h.Sink.(io.Closer)
	ctx := context.Background()
	e := Events()[3]
	if err := h.Sink.Write(ctx, &e); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := h.Sink.Write(ctx, &e); err == nil {
		t.Errorf("Write after Close returned nil, want an error")
	}
	if err := audit.WriteDurable(ctx, h.Sink, &e); err == nil {
		t.Errorf("WriteDurable after Close returned nil, want an error")
	}
}
