package mcpguard_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview61hStandalonePanicBeforeTool: 32f9a2e records a panic of an
// Authenticator (code the guard calls before the tool) as "panic before
// the tool ran" in a Guard's trail. The stand-alone pipeline, whose
// Audit's record "is the one a Guard would write" (Audit's doc), still
// records it as "panic", the tool's crash: the operator reading the trail
// takes it for a tool that may have written, which 32f9a2e set out to end.
func TestReview61hStandalonePanicBeforeTool(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	sink := &r61cPanicSink{panics: func(*audit.Event) bool { return false }}
	auditStep, err := mcpguard.Audit(sink, &mcpguard.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
		panic("review61h: the authenticator's bug")
	})
	ran := 0
	h := mcpguard.Chain(mcpguard.Recover(log), auditStep, mcpguard.Authenticate(auth))(
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran++
			return textResult("ok"), nil
		})
	res, err := h(context.Background(), r61cCall("r"))
	if err != nil || r61cCode(res) != string(mcpguard.CodeInternal) || ran != 0 {
		t.Fatalf("code %q, err %v, ran %d: want INTERNAL, the tool not run", r61cCode(res), err, ran)
	}
	evs := sink.all()
	if len(evs) != 1 || evs[0].Detail != "panic before the tool ran" {
		t.Errorf("records %+v, want one with detail %q, as a Guard records it", evs, "panic before the tool ran")
	}
}
