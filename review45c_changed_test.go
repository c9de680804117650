package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview45cVisibleToolChangeTold: a change to a tool its caller may see
// is passed on to the session, and a tool put back as it was is no change:
// re-added as an identical copy it tells nothing; replaced by another
// definition, or removed, it tells. (A protocol 2025-11-25 session, which
// the server tries to notify of every change.)
func TestReview45cVisibleToolChangeTold(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil }
	cfg := basePolicy(false)
	cfg.Tools = append(cfg.Tools, policy.ToolRule{Name: "lookup", Class: policy.Read})
	w := newNoteWatch()
	h := newServerHarness(t, cfg, nil, func(s *mcp.Server) { s.AddSendingMiddleware(w.middleware(w.delivered, false)) })
	h.srv.AddSendingMiddleware(w.middleware(w.attempted, true))
	h.srv.AddTool(&mcp.Tool{Name: "lookup", Description: "v1", InputSchema: obj}, ok)

	ctx := context.Background()
	cs, ss := h.connectBoth(bob, clientOpts{version: "2025-11-25"})
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}

	told := 0
	for i, st := range []struct {
		name   string
		change func()
		tells  bool
	}{
		{"identical_copy", func() { h.srv.AddTool(&mcp.Tool{Name: "lookup", Description: "v1", InputSchema: obj}, ok) }, false},
		{"replaced", func() { h.srv.AddTool(&mcp.Tool{Name: "lookup", Description: "v2", InputSchema: obj}, ok) }, true},
		{"removed", func() { h.srv.RemoveTools("lookup") }, true},
	} {
		st.change()
		w.waitAttempts(t, i+1)
		if st.tells {
			told++
		}
		if _, got := w.count(ss); got != told {
			t.Fatalf("after %s: the session was sent %d tools/list_changed in all, want %d", st.name, got, told)
		}
	}
}
