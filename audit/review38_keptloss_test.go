//go:build linux

package audit

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReview38KeptEventThatCannotEncodeIsReported pins that a kept event
// the sink fails to encode when it gets to it is never dropped in silence:
// keepable is meant to let only events that cannot fail be held, but should
// the two drift apart, the flush that lost the event returns an error, the
// events around it are still written, and the sink refuses further writes,
// as after a failed write. A trail that quietly misses a decision is what
// an audit sink must never give its reader.
func TestReview38KeptEventThatCannotEncodeIsReported(t *testing.T) {
	ctx := context.Background()
	s, path := review36Open(t)
	if err := s.Keep(ctx, review36Event("before"), nil); err != nil {
		t.Fatalf("Keep(before) = %v", err)
	}
	// What keepable would refuse, held as if it had let it through.
	bad := review36Event("lost")
	bad.LatencyMS = math.NaN()
	s.mu.Lock()
	s.kept = append(s.kept, kept{e: bad})
	s.mu.Unlock()
	if err := s.Keep(ctx, review36Event("after"), nil); err != nil {
		t.Fatalf("Keep(after) = %v", err)
	}

	err := s.Flush()
	if !errors.Is(err, ErrInvalidEvent) || !strings.Contains(err.Error(), "not in the file") {
		t.Fatalf("Flush() = %v, want an error wrapping ErrInvalidEvent that says the event is not in the file", err)
	}
	var got []string
	for _, e := range review37Read(t, path) {
		got = append(got, e.CorrelationID)
	}
	if diff := cmp.Diff([]string{"before", "after"}, got); diff != "" {
		t.Errorf("events in the file (-want +got):\n%s", diff)
	}
	if werr := s.Write(ctx, review36Event("later")); !errors.Is(werr, ErrInvalidEvent) {
		t.Errorf("Write after the loss = %v, want the loss's error", werr)
	}
}
