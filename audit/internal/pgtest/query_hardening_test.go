package pgtest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestPostgresQueryHardening: on PostgreSQL, an argument beyond float64 is
// read back without failing the query, and a filter holding NUL or invalid
// UTF-8 (stored as U+FFFD) finds the event instead of failing.
func TestPostgresQueryHardening(t *testing.T) {
	var srv server
	srv.once.Do(func() { srv.pg = testsvc.StartPostgres(t) })
	ev := func(id string) *audit.Event {
		return &audit.Event{Time: time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC), CorrelationID: id,
			SessionID: "s-" + id, Subject: "alice", Tool: "search_docs", Phase: audit.PhaseOutcome, Allowed: true}
	}

	// The sink stores a NUL of a text field as U+FFFD; a Filter holding
	// the value that was written goes to PostgreSQL unchanged, which
	// refuses it: the query fails instead of finding the event.
	t.Run("filter_with_nul", func(t *testing.T) {
		ctx := context.Background()
		s, err := audit.NewSQL(ctx, srv.db(t), audit.Postgres, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		e := ev("nul")
		e.Tool = "delete\x00_all"
		if err := s.WriteDurable(ctx, e); err != nil {
			t.Fatal(err)
		}
		got, err := s.Query(ctx, audit.Filter{Tool: e.Tool})
		if err != nil || len(got) != 1 {
			t.Errorf("Query(Filter{Tool: %q}) = %d events, %v; want the event written with that tool", e.Tool, len(got), err)
		}
	})

	// An opted-in argument 1e400 is committed, then makes every Query
	// that reaches its row fail.
	t.Run("args_beyond_float64", func(t *testing.T) {
		ctx := context.Background()
		s, err := audit.NewSQL(ctx, srv.db(t), audit.Postgres, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.WriteDurable(ctx, ev("other")); err != nil {
			t.Fatal(err)
		}
		e := ev("huge")
		e.Args = map[string]any{"amount": json.Number("1e400")}
		if err := s.WriteDurable(ctx, e); err != nil {
			t.Fatal(err)
		}
		got, err := s.Query(ctx, audit.Filter{})
		if err != nil || len(got) != 2 {
			t.Errorf("Query(all) = %d events, %v; want 2", len(got), err)
		}
	})
}
