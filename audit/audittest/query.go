package audittest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
)

// SessionStart is the time of the first event of [SessionEvents] minus one second.
var SessionStart = time.Date(2026, 7, 28, 9, 0, 0, 0, time.UTC)

// SessionEvents returns one session of alice and one of bob, as the pipeline
// records them: reads, a write denied by the allowlist (made by the handler
// of alice's first read: its parent), a dry-run write with its intent, a
// rate-limit denial, an unauthenticated call. Write them to a
// queryable sink before [RunQuery].
func SessionEvents() []audit.Event {
	ev := func(sec int, corr, sess, subj, tool, class string, ph audit.Phase, allowed, dry bool, code string) audit.Event {
		return audit.Event{Time: SessionStart.Add(time.Duration(sec) * time.Second), CorrelationID: corr, SessionID: sess,
			Subject: subj, Roles: []string{"engineering"}, Tool: tool, Class: class, Phase: ph, Allowed: allowed,
			DryRun: dry, Code: code, LatencyMS: float64(sec) / 10, ProtocolVersion: "2026-07-28", ClientName: "demo"}
	}
	o, i := audit.PhaseOutcome, audit.PhaseIntent
	viaGateway := func(e audit.Event, id string) audit.Event { e.RequestID = id; return e }
	within := func(e audit.Event, parent string) audit.Event { e.ParentID = parent; return e }
	return []audit.Event{
		ev(1, "c1", "s-alice", "alice", "search_docs", "read", o, true, false, ""),
		within(ev(2, "c2", "s-alice", "alice", "create_ticket", "write", o, false, false, "WRITE_NOT_ALLOWED"), "c1"),
		viaGateway(ev(3, "c3", "s-alice", "alice", "create_ticket", "write", i, true, true, ""), "gw-7"),
		viaGateway(ev(4, "c3", "s-alice", "alice", "create_ticket", "write", o, true, true, ""), "gw-7"),
		ev(5, "c4", "s-bob", "bob", "search_docs", "read", o, true, false, ""),
		ev(6, "c5", "s-bob", "bob", "search_docs", "read", o, false, false, "RATE_LIMIT_EXCEEDED"),
		ev(7, "c6", "", "", "search_docs", "", o, false, false, "UNAUTHENTICATED"),
	}
}

// RunQuery checks, as subtests of t, that query (over a sink holding exactly
// [SessionEvents]) implements every [audit.Filter] field, returns events
// oldest first, and reconstructs alice's session: who did what, allowed or
// not, dry run or not.
func RunQuery(t *testing.T, query func(ctx context.Context, f audit.Filter) ([]audit.Event, error)) {
	t.Helper()
	yes, no := true, false
	tests := []struct {
		name string
		f    audit.Filter
		want []string // correlation_id/phase
	}{
		{"all", audit.Filter{}, []string{"c1/outcome", "c2/outcome", "c3/intent", "c3/outcome", "c4/outcome", "c5/outcome", "c6/outcome"}},
		{"by_session", audit.Filter{SessionID: "s-bob"}, []string{"c4/outcome", "c5/outcome"}},
		{"by_subject", audit.Filter{Subject: "alice"}, []string{"c1/outcome", "c2/outcome", "c3/intent", "c3/outcome"}},
		{"by_tool", audit.Filter{Tool: "create_ticket"}, []string{"c2/outcome", "c3/intent", "c3/outcome"}},
		{"denied", audit.Filter{Allowed: &no}, []string{"c2/outcome", "c5/outcome", "c6/outcome"}},
		{"allowed_by_bob", audit.Filter{Subject: "bob", Allowed: &yes}, []string{"c4/outcome"}},
		{"by_code", audit.Filter{Code: "RATE_LIMIT_EXCEEDED"}, []string{"c5/outcome"}},
		{"by_correlation", audit.Filter{CorrelationID: "c3"}, []string{"c3/intent", "c3/outcome"}},
		{"by_request_id", audit.Filter{RequestID: "gw-7"}, []string{"c3/intent", "c3/outcome"}},
		{"by_request_id_none", audit.Filter{RequestID: "gw-8"}, nil},
		{"by_parent_id", audit.Filter{ParentID: "c1"}, []string{"c2/outcome"}},
		{"by_parent_id_none", audit.Filter{ParentID: "c2"}, nil},
		{"intents", audit.Filter{Phase: audit.PhaseIntent}, []string{"c3/intent"}},
		{"time_range", audit.Filter{Since: SessionStart.Add(2 * time.Second), Until: SessionStart.Add(4 * time.Second)}, []string{"c2/outcome", "c3/intent"}},
		{"since_other_zone", audit.Filter{Since: SessionStart.Add(6 * time.Second).In(time.FixedZone("", -7*3600))}, []string{"c5/outcome", "c6/outcome"}},
		{"limit", audit.Filter{Tool: "search_docs", Limit: 2}, []string{"c1/outcome", "c4/outcome"}},
		{"offset", audit.Filter{Tool: "search_docs", Offset: 1, Limit: 2}, []string{"c4/outcome", "c5/outcome"}},
		{"offset_no_limit", audit.Filter{Tool: "search_docs", Offset: 2}, []string{"c5/outcome", "c6/outcome"}},
		{"offset_past_end", audit.Filter{Tool: "search_docs", Offset: 4}, nil},
		{"no_match", audit.Filter{Subject: "mallory"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := query(context.Background(), tt.f)
			if err != nil {
				t.Fatalf("Query(%+v): %v", tt.f, err)
			}
			var got []string
			for _, e := range evs {
				got = append(got, e.CorrelationID+"/"+string(e.Phase))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Query(%+v) (-want +got):\n%s", tt.f, diff)
			}
		})
	}
	t.Run("reconstruct_session", func(t *testing.T) {
		evs, err := query(context.Background(), audit.Filter{SessionID: "s-alice"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range evs {
			got = append(got, fmt.Sprintf("%s %s %s(%s) %s allowed=%v dry_run=%v code=%q at +%v",
				e.CorrelationID, e.Subject, e.Tool, e.Class, e.Phase, e.Allowed, e.DryRun, e.Code, e.Time.Sub(SessionStart)))
		}
		want := []string{
			`c1 alice search_docs(read) outcome allowed=true dry_run=false code="" at +1s`,
			`c2 alice create_ticket(write) outcome allowed=false dry_run=false code="WRITE_NOT_ALLOWED" at +2s`,
			`c3 alice create_ticket(write) intent allowed=true dry_run=true code="" at +3s`,
			`c3 alice create_ticket(write) outcome allowed=true dry_run=true code="" at +4s`,
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("session s-alice reconstructs as (-want +got):\n%s", diff)
		}
		want2 := SessionEvents()[:4]
		if diff := cmp.Diff(want2, evs); diff != "" {
			t.Errorf("session s-alice events (-want +got):\n%s", diff)
		}
	})
}
