package audittest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
)

// RunKeeper runs the conformance tests of [audit.Keeper] as subtests of t,
// for a sink newHarness returns (which must implement it): every event
// handed over with Keep is recorded as Write records it, with
// [audit.ArgsSHA256] of its arguments when its own hash is empty (and its
// own hash otherwise), from concurrent callers too; an event Write refuses
// is refused by Keep; a closed sink refuses Keep.
func RunKeeper(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	for _, tt := range []struct {
		name string
		run  func(t *testing.T, h Harness, k audit.Keeper)
	}{
		{"round_trip", testKeepRoundTrip},
		{"concurrent", testKeepConcurrent},
		{"refuses_what_write_refuses", testKeepRefuses},
		{"closed", testKeepClosed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			k, ok := h.Sink.(audit.Keeper)
			if !ok {
				t.Fatalf("%T does not implement audit.Keeper", h.Sink)
			}
			tt.run(t, h, k)
		})
	}
}

// keepArgs are the arguments handed over with the i-th event.
func keepArgs(i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"z": %d, "a": "\u00e9"}`, i))
}

func testKeepRoundTrip(t *testing.T, h Harness, k audit.Keeper) {
	ctx := context.Background()
	want := Events()
	for i := range want {
		e := Events()[i]
		var args json.RawMessage
		if e.ArgsSHA256 == "" {
			args = keepArgs(i)
			want[i].ArgsSHA256 = audit.ArgsSHA256(args)
		} else if i%2 == 0 {
			args = keepArgs(i) // its own hash stays
		}
		if err := k.Keep(ctx, &e, args); err != nil {
			t.Fatalf("Keep(%s): %v", e.CorrelationID, err)
		}
	}
	got := read(t, h)
	slices.SortStableFunc(want, byCorrelation)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kept events mismatch (-want +got):\n%s", diff)
	}
}

func testKeepConcurrent(t *testing.T, h Harness, k audit.Keeper) {
	const writers, each = 8, 250
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				e := Events()[3]
				e.CorrelationID = fmt.Sprintf("k-%d-%03d", w, i)
				var err error
				if i%5 == 0 {
					e.ArgsSHA256 = audit.ArgsSHA256(keepArgs(i))
					err = h.Sink.Write(ctx, &e)
				} else {
					err = k.Keep(ctx, &e, keepArgs(i))
				}
				if err != nil {
					t.Errorf("writer %d event %d: %v", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	got := read(t, h)
	if len(got) != writers*each {
		t.Fatalf("recorded %d events, want %d", len(got), writers*each)
	}
	for _, e := range got {
		var w, i int
		if _, err := fmt.Sscanf(e.CorrelationID, "k-%d-%03d", &w, &i); err != nil {
			t.Fatalf("correlation id %q", e.CorrelationID)
		}
		if want := audit.ArgsSHA256(keepArgs(i)); e.ArgsSHA256 != want {
			t.Fatalf("%s: args_sha256 %q, want %q", e.CorrelationID, e.ArgsSHA256, want)
		}
	}
}

func testKeepRefuses(t *testing.T, h Harness, k audit.Keeper) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		mod  func(e *audit.Event)
	}{
		{"no_correlation_id", func(e *audit.Event) { e.CorrelationID = "" }},
		{"bad_phase", func(e *audit.Event) { e.Phase = "later" }},
		{"nan_latency", func(e *audit.Event) { e.LatencyMS = math.NaN() }},
		{"args_nan", func(e *audit.Event) { e.Args = map[string]any{"x": math.NaN()} }},
	} {
		e := Events()[3]
		tc.mod(&e)
		w := e
		werr := h.Sink.Write(ctx, &w)
		kerr := k.Keep(ctx, &e, keepArgs(0))
		if werr == nil {
			t.Fatalf("%s: Write accepted the event (test setup)", tc.name)
		}
		if kerr == nil || !errors.Is(kerr, audit.ErrInvalidEvent) != !errors.Is(werr, audit.ErrInvalidEvent) {
			t.Errorf("%s: Keep = %v, Write = %v", tc.name, kerr, werr)
		}
	}
	if got := read(t, h); len(got) != 0 {
		t.Errorf("refused events recorded: %d", len(got))
	}
}

func testKeepClosed(t *testing.T, h Harness, k audit.Keeper) {
	c, ok := h.Sink.(interface{ Close() error })
	if !ok {
		t.Fatal("a sink must implement io.Closer")
	}
	e := Events()[3]
	if err := k.Keep(context.Background(), &e, keepArgs(1)); err != nil {
		t.Fatalf("Keep: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	e2 := Events()[3]
	if err := k.Keep(context.Background(), &e2, nil); err == nil {
		t.Error("Keep after Close returned nil, want an error")
	}
}
