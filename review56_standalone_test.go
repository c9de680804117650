package mcpguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review56Chain returns h behind Recover and Audit in the pipeline's order,
// with the Audit's sink.
func review56Chain(t *testing.T, h mcp.ToolHandler) (mcp.ToolHandler, *memSink) {
	t.Helper()
	sink := &memSink{}
	auditStep, err := mcpguard.Audit(sink, &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return mcpguard.Chain(mcpguard.Recover(quiet), auditStep)(h), sink
}

func review56Call(t *testing.T, h mcp.ToolHandler) *mcp.CallToolResult {
	t.Helper()
	res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t", Arguments: json.RawMessage(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestReview56AuditRecordsNilResult: a handler that returns (nil, nil) is
// answered INTERNAL by the Recover outside Audit; the Audit record must say
// the call was refused INTERNAL (as a Guard's does), not that it was
// allowed.
func TestReview56AuditRecordsNilResult(t *testing.T) {
	h, sink := review56Chain(t, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, nil
	})
	res := review56Call(t, h)
	if d, ok := mcpguard.DenialOf(res, nil); !ok || d.Code != mcpguard.CodeInternal {
		t.Fatalf("answer %+v, want INTERNAL", res)
	}
	evs := sink.all()
	if len(evs) != 1 {
		t.Fatalf("%d records, want 1", len(evs))
	}
	if ev := evs[0]; ev.Allowed || ev.Code != "INTERNAL" {
		t.Errorf("record allowed=%v code=%q detail=%q, want refused INTERNAL (the client was refused)", ev.Allowed, ev.Code, ev.Detail)
	}
}

// TestReview56RecoverCodelessDenial: a *DenialError without a code is no
// refusal of the error contract. The stand-alone Recover, like the Guard,
// answers it INTERNAL with its own message (the handler's may hold
// anything), not as a refusal of code "" that DenialOf cannot read, and
// the Audit records it INTERNAL.
func TestReview56RecoverCodelessDenial(t *testing.T) {
	h, sink := review56Chain(t, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &mcpguard.DenialError{Message: "account 4111-1111 not found"}
	})
	res := review56Call(t, h)
	raw, _ := json.Marshal(res)
	d, ok := mcpguard.DenialOf(res, nil)
	if !ok || d.Code != mcpguard.CodeInternal || strings.Contains(string(raw), "4111") {
		t.Errorf("answer %s, want INTERNAL without the handler's text", raw)
	}
	evs := sink.all()
	if len(evs) != 1 {
		t.Fatalf("%d records, want 1", len(evs))
	}
	if ev := evs[0]; ev.Allowed || ev.Code != "INTERNAL" {
		t.Errorf("record allowed=%v code=%q, want refused INTERNAL", ev.Allowed, ev.Code)
	}
}
