package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview58bFailClosedFanoutTrailSaysAllowed: with AuditFailClosed and
// a fanout of two sinks, one of which fails (a JSONL file on a full disk),
// the guard refuses the read with AUDIT_UNAVAILABLE. The other sink
// (SQLite) recorded the outcome all the same (FanoutSink: "the other sinks
// still record e"), and that record said the call was allowed, with no
// code: the trail showed a read answered as allowed where the caller was
// refused, and the refusal itself was in no trail. Now a second outcome
// record, of the refusal, follows it: the call's last outcome in the trail
// is the refusal the caller got.
func TestReview58bFailClosedFanoutTrailSaysAllowed(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{{Name: "echo", Class: policy.Read}},
	})
	if err != nil {
		t.Fatal(err)
	}
	db, err := audit.OpenSQLite(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	good, err := audit.NewSQL(context.Background(), db, audit.SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A second trail on a disk that is full: every write fails (ENOSPC).
	bad, err := audit.OpenJSONL("/dev/full", &audit.JSONLOptions{BufferSize: 1, FlushInterval: -1})
	if err != nil {
		t.Skipf("cannot open /dev/full: %v", err)
	}
	defer bad.Close()
	sink := audit.Fanout(good, bad)
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Logger: quiet, AuditFailClosed: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Wrap(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
	if err != nil {
		t.Fatal(err)
	}
	r := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(`{}`)}}
	res, err := h(context.Background(), r)
	de, ok := mcpguard.DenialOf(res, err)
	if !ok || de.Code != mcpguard.CodeAuditUnavailable {
		t.Fatalf("the read with a failing sink: %s; want AUDIT_UNAVAILABLE", errOrResult(res, err))
	}
	if err := good.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs, err := good.Query(context.Background(), audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 {
		t.Fatalf("%d records in the SQL trail, want 2 (the outcome, then its refusal): %+v", len(evs), evs)
	}
	last := evs[len(evs)-1]
	if evs[0].Time.After(last.Time) {
		last = evs[0]
	}
	if last.Phase != audit.PhaseOutcome || last.Allowed || last.Code != "AUDIT_UNAVAILABLE" ||
		last.CorrelationID != de.CorrelationID || last.Detail != "the outcome record could not be written: the answer was withheld" {
		t.Errorf("the call's last outcome in the SQL trail: %+v; want its refusal, AUDIT_UNAVAILABLE, under %s", last, de.CorrelationID)
	}
}

// errOrResult renders what the caller got.
func errOrResult(res *mcp.CallToolResult, err error) string {
	if err != nil {
		return err.Error()
	}
	b, _ := json.Marshal(res.StructuredContent)
	return string(b)
}
