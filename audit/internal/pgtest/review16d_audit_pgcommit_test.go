package pgtest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview16dCommitLostThreeTimes: every COMMIT of a batch's three
// attempts is lost on its way to the server (with the connection), so the
// sink goes on row by row, unsure whether the last attempt committed. The
// batch's first row repeats, in the nine columns committed compares, a
// record committed earlier (the same call recorded by two sessions'
// gateways): finding that record must not pass for finding the batch, as
// it does not in the batch's own check. Before the fix the row-by-row
// path looked for the first row alone, took it for committed and lost it,
// with no error from Flush or Close.
func TestReview16dCommitLostThreeTimes(t *testing.T) {
	p := startFailServer(t)
	s, drop, dropped, lastErr := sinkBehindDropper(t, p)
	ctx := context.Background()
	at := time.Unix(1_800_000_000, 0).UTC()
	ev := func(tool, session string) *audit.Event {
		return &audit.Event{Time: at, CorrelationID: "gw-request-1", SessionID: session, Tool: tool, Phase: audit.PhaseOutcome, Code: "FORBIDDEN", Detail: "refused " + tool}
	}
	if err := s.Write(ctx, ev("tool_0", "session-a")); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	drop.Store(3)
	const n = 20
	for i := range n {
		if err := s.Write(ctx, ev("tool_"+strconv.Itoa(i), "session-b")); err != nil {
			t.Fatal(err)
		}
	}
	flushErr := s.Flush(ctx)
	closeErr := s.Close()
	if dropped.Load() != 3 {
		t.Fatalf("the proxy dropped %d COMMITs, want 3: the test did not break the batch's attempts", dropped.Load())
	}
	rs, err := p.db.Query(`SELECT tool, session_id, COUNT(*) FROM audit_log GROUP BY tool, session_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	got := map[string]int{}
	for rs.Next() {
		var tool, session string
		var c int
		if err := rs.Scan(&tool, &session, &c); err != nil {
			t.Fatal(err)
		}
		got[tool+"/"+session] = c
	}
	var wrong []string
	for i := range n {
		if k := "tool_" + strconv.Itoa(i) + "/session-b"; got[k] != 1 {
			wrong = append(wrong, fmt.Sprintf("%s×%d", k, got[k]))
		}
	}
	if len(wrong) > 0 || got["tool_0/session-a"] != 1 {
		t.Errorf("after three COMMITs lost on their way: %v (tool_0/session-a×%d); want every row once. Flush: %v, Close: %v, Stats: %+v, last OnError: %v",
			wrong, got["tool_0/session-a"], flushErr, closeErr, s.Stats(), lastErr.Load())
	}
}
