package mcpguard_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
)

// r31Rules: "refund_and_notify" (a write) and "lookup" (a read) are
// composite tools whose handlers call other guarded tools in-process with
// their context; "trigger_refund" is a write, "preview_refund" a write the
// guard always runs as a dry run, "confirm_refund" a write that needs a
// confirmation, "forbidden_refund" a write no one may make.
var r31Rules = []policy.ToolRule{
	{Name: "refund_and_notify", Class: policy.Write},
	{Name: "lookup", Class: policy.Read},
	{Name: "trigger_refund", Class: policy.Write},
	{Name: "preview_refund", Class: policy.Write},
	{Name: "confirm_refund", Class: policy.Write, Confirm: true},
	{Name: "forbidden_refund", Class: policy.Write},
}

func r31Policy(t *testing.T) *policy.Policy {
	return r30Policy(t, policy.Config{Tools: r31Rules,
		WriteAllowlist: []string{"refund_and_notify", "trigger_refund", "preview_refund", "confirm_refund"}})
}

// r31Call calls the handler h of tool name directly, as a client's call
// (with ctx) or a composite tool's handler (with its own context) does.
func r31Call(ctx context.Context, h mcp.ToolHandler, name string) (*mcp.CallToolResult, error) {
	return h(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name, Arguments: json.RawMessage(`{}`)}})
}

// r31Records returns the records of sink by tool, in the order written.
func r31Records(evs []audit.Event) map[string][]audit.Event {
	m := map[string][]audit.Event{}
	for _, e := range evs {
		m[e.Tool] = append(m[e.Tool], e)
	}
	return m
}

// r31Sinks are the sinks the records are read back from: in memory (a
// plain Sink), JSONL (a Keeper), SQLite and PostgreSQL.
func r31Sinks(t *testing.T) map[string]func(t *testing.T) (audit.Sink, func() []audit.Event) {
	var pg *testsvc.Postgres
	return map[string]func(t *testing.T) (audit.Sink, func() []audit.Event){
		"memory": func(t *testing.T) (audit.Sink, func() []audit.Event) {
			s := &memSink{}
			return s, s.all
		},
		"jsonl": func(t *testing.T) (audit.Sink, func() []audit.Event) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			s, err := audit.OpenJSONL(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s, func() []audit.Event {
				if err := s.Flush(); err != nil {
					t.Fatal(err)
				}
				evs, err := audit.QueryJSONL(path, audit.Filter{})
				if err != nil {
					t.Fatal(err)
				}
				return evs
			}
		},
		"sqlite": func(t *testing.T) (audit.Sink, func() []audit.Event) {
			db, err := audit.OpenSQLite(filepath.Join(t.TempDir(), "audit.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return r31SQL(t, db, audit.SQLite)
		},
		"postgres": func(t *testing.T) (audit.Sink, func() []audit.Event) {
			if pg == nil {
				pg = testsvc.StartPostgres(t)
			}
			db, err := sql.Open("pgx", pg.DSN)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return r31SQL(t, db, audit.Postgres)
		},
	}
}

func r31SQL(t *testing.T, db *sql.DB, d audit.Dialect) (audit.Sink, func() []audit.Event) {
	ctx := context.Background()
	s, err := audit.NewSQL(ctx, db, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, func() []audit.Event {
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		evs, err := s.Query(ctx, audit.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
}

// TestReview31NestedParent: the write "refund_and_notify" calls, with its
// handler's context, the guarded write "trigger_refund" (allowed), a dry
// run, a write that asks for a confirmation, a write the policy refuses
// and the read "lookup", which itself calls "trigger_refund". Every
// record of an inner call (intents, outcomes, refusals, the dry run's,
// the confirmation round's) carries the correlation id of the call whose
// handler made it, and only that one (the direct outer call); the outer
// call's records carry none; Filter.ParentID finds the inner calls. So in
// every sink: in memory, JSONL (whose Keep encodes later), SQLite and
// PostgreSQL.
func TestReview31NestedParent(t *testing.T) {
	for name, open := range r31Sinks(t) {
		t.Run(name, func(t *testing.T) {
			sink, read := open(t)
			g, err := mcpguard.New(r31Policy(t), fixed(bob), &mcpguard.Options{Audit: sink, Logger: quiet,
				Confirmer: testSigner(t, nil), Tools: map[string]mcpguard.ToolOptions{"preview_refund": {DryRun: true}}})
			if err != nil {
				t.Fatal(err)
			}
			obj := map[string]any{"type": "object"}
			wrap := func(name string, h mcp.ToolHandler) mcp.ToolHandler {
				t.Helper()
				tool := &mcp.Tool{Name: name, InputSchema: obj}
				if name == "lookup" {
					tool.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
				}
				w, err := g.Wrap(tool, h)
				if err != nil {
					t.Fatal(err)
				}
				return w
			}
			leaf := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return textResult("done"), nil
			}
			trigger := wrap("trigger_refund", leaf)
			preview := wrap("preview_refund", leaf)
			confirmed := wrap("confirm_refund", leaf)
			forbidden := wrap("forbidden_refund", leaf)
			lookup := wrap("lookup", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return r31Call(ctx, trigger, "trigger_refund")
			})
			outer := wrap("refund_and_notify", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				for _, c := range []struct {
					h    mcp.ToolHandler
					name string
				}{{trigger, "trigger_refund"}, {preview, "preview_refund"}, {confirmed, "confirm_refund"}, {forbidden, "forbidden_refund"}, {lookup, "lookup"}} {
					if _, err := r31Call(ctx, c.h, c.name); err != nil {
						t.Errorf("inner %s: %v", c.name, err)
					}
				}
				return textResult("refunded and notified"), nil
			})
			if res, err := r31Call(context.Background(), outer, "refund_and_notify"); err != nil || res.IsError {
				t.Fatalf("outer call: %+v, %v", res, err)
			}
			// A top-level call of an inner tool has no parent.
			if _, err := r31Call(context.Background(), trigger, "trigger_refund"); err != nil {
				t.Fatal(err)
			}
			recs := r31Records(read())
			outs := recs["refund_and_notify"]
			if len(outs) != 2 || outs[0].Phase != audit.PhaseIntent {
				t.Fatalf("outer records: %+v, want an intent and an outcome", outs)
			}
			top := outs[0].CorrelationID
			for _, e := range outs {
				if e.ParentID != "" {
					t.Errorf("outer %s record: parent %q, want none", e.Phase, e.ParentID)
				}
			}
			look := recs["lookup"]
			if len(look) != 1 {
				t.Fatalf("lookup records: %+v", look)
			}
			want := map[string]int{"preview_refund": 1, "confirm_refund": 1, "forbidden_refund": 1, "lookup": 1}
			for tool, n := range want {
				if len(recs[tool]) != n {
					t.Errorf("%s: %d records, want %d: %+v", tool, len(recs[tool]), n, recs[tool])
				}
				for _, e := range recs[tool] {
					if e.ParentID != top {
						t.Errorf("%s %s record (allowed %v, dry run %v, code %q, detail %q): parent %q, want the outer call's %s",
							tool, e.Phase, e.Allowed, e.DryRun, e.Code, e.Detail, e.ParentID, top)
					}
				}
			}
			if e := recs["preview_refund"]; len(e) == 1 && !e[0].DryRun {
				t.Errorf("preview_refund: %+v, want a dry run", e[0])
			}
			if e := recs["confirm_refund"]; len(e) == 1 && e[0].Allowed {
				t.Errorf("confirm_refund: %+v, want a round that asks for a confirmation", e[0])
			}
			if e := recs["forbidden_refund"]; len(e) == 1 && e[0].Allowed {
				t.Errorf("forbidden_refund: %+v, want a refusal", e[0])
			}
			// trigger_refund: from the outer call (intent, outcome), from
			// lookup (intent, outcome), top level (intent, outcome).
			trig := recs["trigger_refund"]
			if len(trig) != 6 {
				t.Fatalf("trigger_refund: %d records, want 6: %+v", len(trig), trig)
			}
			byCorr := map[string][]audit.Event{}
			for _, e := range trig {
				byCorr[e.CorrelationID] = append(byCorr[e.CorrelationID], e)
			}
			parents := map[string]int{}
			for corr, es := range byCorr {
				if len(es) != 2 || es[0].Phase != audit.PhaseIntent || es[0].ParentID != es[1].ParentID {
					t.Errorf("trigger_refund call %s: %+v, want an intent and an outcome of one parent", corr, es)
				}
				parents[es[0].ParentID]++
			}
			if parents[top] != 1 || parents[look[0].CorrelationID] != 1 || parents[""] != 1 {
				t.Errorf("trigger_refund calls by parent: %v; want one each of the outer call %s, lookup %s (the direct outer call, not the outermost) and none",
					parents, top, look[0].CorrelationID)
			}
			if q, ok := sink.(interface {
				Query(context.Context, audit.Filter) ([]audit.Event, error)
			}); ok {
				got, err := q.Query(context.Background(), audit.Filter{ParentID: top, Phase: audit.PhaseOutcome})
				if err != nil || len(got) != 5 {
					t.Errorf("Filter{ParentID: outer}: %d outcomes (%v), want 5", len(got), err)
				}
			}
		})
	}
}

// TestReview31AuditMiddlewareParent: the stand-alone Audit middleware's
// records link the same way: a chain whose handler calls another chain
// (with its own Audit and WriteAhead) with its context, and a Guard's
// handler that calls such a chain. The inner chain's intent and outcome
// carry the outer call's correlation id; the outer's carry none.
func TestReview31AuditMiddlewareParent(t *testing.T) {
	p := nestPolicy(t)
	sink := &memSink{}
	am, err := mcpguard.Audit(sink, &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	wa, err := mcpguard.WriteAhead(sink, p, &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	id := mcpguard.Authenticate(fixed(bob))
	inner := mcpguard.Chain(id, am, wa)(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("done"), nil
	})
	outerChain := mcpguard.Chain(id, am)(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return r31Call(ctx, inner, "trigger_refund")
	})
	g := r2Guard(t, p, sink)
	outerGuard, err := g.Wrap(&mcp.Tool{Name: "refund_and_notify", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return r31Call(ctx, inner, "trigger_refund")
		})
	if err != nil {
		t.Fatal(err)
	}
	for name, outer := range map[string]mcp.ToolHandler{"audit_chain": outerChain, "guard": outerGuard} {
		t.Run(name, func(t *testing.T) {
			n := len(sink.all())
			if _, err := r31Call(context.Background(), outer, "refund_and_notify"); err != nil {
				t.Fatal(err)
			}
			recs := r31Records(sink.all()[n:])
			outs, trig := recs["refund_and_notify"], recs["trigger_refund"]
			if len(outs) == 0 || len(trig) != 2 || trig[0].Phase != audit.PhaseIntent {
				t.Fatalf("records: outer %+v, inner %+v", outs, trig)
			}
			top := outs[0].CorrelationID
			for _, e := range outs {
				if e.ParentID != "" {
					t.Errorf("outer %s record: parent %q, want none", e.Phase, e.ParentID)
				}
			}
			for _, e := range trig {
				if e.ParentID != top || e.CorrelationID == top {
					t.Errorf("inner %s record %s: parent %q, want %s", e.Phase, e.CorrelationID, e.ParentID, top)
				}
			}
		})
	}
}
