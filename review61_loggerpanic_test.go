package mcpguard_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview61StepLoggersContained: the stand-alone Recover and Audit log
// with the logger they are given, Recover in the deferred function that
// recovers a handler's panic, Audit when its sink fails: a handler of that
// logger that panics (its bug) must not end the process there either, as
// the Guard's does not (TestReview61dLoggerPanic). The call is answered,
// and Audit's record of it is kept.
func TestReview61StepLoggersContained(t *testing.T) {
	log := slog.New(r61dPanicHandler{})
	sink := &r61cPanicSink{panics: func(*audit.Event) bool { return false }}
	auditStep, err := mcpguard.Audit(audit.SinkFunc(func(ctx context.Context, e *audit.Event) error {
		sink.Write(ctx, e)
		return errors.New("review61: the sink failed") // Audit logs it
	}), &mcpguard.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	for name, h := range map[string]mcp.ToolHandler{
		"recover": mcpguard.Recover(log)(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			panic("review61: the tool's bug")
		}),
		"audit": mcpguard.Chain(auditStep, mcpguard.Authenticate(auth))(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		}),
	} {
		func() {
			defer func() {
				if v := recover(); v != nil {
					t.Errorf("%s: the log handler's panic escaped (it ends a go-sdk server's process): %v", name, v)
				}
			}()
			res, err := h(context.Background(), r61cCall("r"))
			if err != nil || res == nil {
				t.Errorf("%s: %v %v", name, res, err)
			}
		}()
	}
	if n := len(sink.all()); n != 1 {
		t.Errorf("Audit's records: %d, want 1", n)
	}
}
