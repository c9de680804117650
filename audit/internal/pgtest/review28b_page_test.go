package pgtest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestReview28bPageBounds: Offset and Limit at the ends of an int (whose sum
// overflows), and an Offset without a Limit, select the same events on
// PostgreSQL as on the other readers.
func TestReview28bPageBounds(t *testing.T) {
	var srv server
	srv.once.Do(func() { srv.pg = testsvc.StartPostgres(t) })
	ctx := context.Background()
	sinks, flush, readers := r28pTrail(t, &srv)
	base := time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC)
	var all []string
	for i := range 5 {
		e := audit.Event{Time: base.Add(time.Duration(i/2) * time.Nanosecond), CorrelationID: fmt.Sprintf("b%d", i), Phase: audit.PhaseOutcome}
		for _, s := range sinks {
			e := e
			if err := s.Write(ctx, &e); err != nil {
				t.Fatal(err)
			}
		}
		all = append(all, e.CorrelationID)
	}
	flush()
	for _, tt := range []struct{ off, limit int }{
		{0, math.MaxInt}, {1, math.MaxInt}, {math.MaxInt, math.MaxInt}, {math.MaxInt, 1},
		{math.MaxInt, 0}, {3, 0}, {4, 1}, {math.MaxInt - 1, 2},
	} {
		w := all[min(tt.off, len(all)):]
		if tt.limit > 0 {
			w = w[:min(tt.limit, len(w))]
		}
		for _, r := range readers {
			evs, err := r.query(audit.Filter{Offset: tt.off, Limit: tt.limit})
			if err != nil {
				t.Errorf("%s: Offset %d Limit %d: %v", r.name, tt.off, tt.limit, err)
				continue
			}
			if got := r28pIDs(evs); !slices.Equal(got, w) {
				t.Errorf("%s: Offset %d Limit %d = %v, want %v", r.name, tt.off, tt.limit, got, w)
			}
		}
	}
}
