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

// TestReview61PanicBeforeToolRecorded: a panic of code the guard calls
// before the tool (here an Authenticator's bug) was recorded with detail
// "panic", as a tool that panicked is: an operator reading the trail
// after an incident took it for the tool's crash (a write that may have
// run). Its record says the tool did not run; a handler's own panic is
// still "panic".
func TestReview61PanicBeforeToolRecorded(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "r", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		authPanics bool
		want       string
	}{{"authenticator", true, "panic before the tool ran"}, {"handler", false, "panic"}} {
		sink := &r61cPanicSink{panics: func(*audit.Event) bool { return false }}
		auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
			if tc.authPanics {
				panic("review61: the authenticator's bug")
			}
			return alice, nil
		})
		g, err := mcpguard.New(pol, auth, &mcpguard.Options{Audit: sink, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		h, err := g.Wrap(&mcp.Tool{Name: "r", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				panic("review61: the tool's bug")
			})
		if err != nil {
			t.Fatal(err)
		}
		res, err := h(context.Background(), r61cCall("r"))
		if err != nil || r61cCode(res) != string(mcpguard.CodeInternal) {
			t.Errorf("%s: %q %v, want INTERNAL", tc.name, r61cCode(res), err)
		}
		if evs := sink.all(); len(evs) != 1 || evs[0].Detail != tc.want {
			t.Errorf("%s: records %+v, want one with detail %q", tc.name, evs, tc.want)
		}
	}
}
