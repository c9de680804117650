package mcpguard_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview61fSinkPanicWithheld covers auditWithheld's recover, which no
// test of 22cbfe1 reaches: with AuditFailClosed, a read whose outcome the
// sink panics on is withheld (AUDIT_UNAVAILABLE) and a second record, of
// the withholding, is written to the same sink, which panics again. That
// panic must not escape the guard (it would end a go-sdk server's process).
func TestReview61fSinkPanicWithheld(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "r", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	sink := &r61cPanicSink{panics: func(e *audit.Event) bool { return e.Phase == audit.PhaseOutcome }}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Audit: sink, AuditFailClosed: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Wrap(&mcp.Tool{Name: "r", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if v := recover(); v != nil {
			t.Errorf("the sink's panic on the withheld record escaped the guard: %v", v)
		}
	}()
	res, err := h(context.Background(), r61cCall("r"))
	if err != nil || r61cCode(res) != string(mcpguard.CodeAuditUnavailable) {
		t.Errorf("answer %q (err %v), want AUDIT_UNAVAILABLE", r61cCode(res), err)
	}
}
