package mcpguard

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview19hAddedServersForgotten: Guard.AddTool remembers, weakly, the
// servers it added a tool to. Servers that are gone are forgotten: AddTool
// on many short-lived servers does not grow the guard without bound.
func TestReview19hAddedServersForgotten(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "t", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	who := AuthenticatorFunc(func(context.Context, mcp.Request) (*Identity, error) { return nil, ErrUnauthenticated })
	g, err := New(pol, who, &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	tool := &mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	h := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	const n = 200
	servers := make([]*mcp.Server, n)
	for i := range servers {
		servers[i] = mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
		if err := g.AddTool(servers[i], tool, h); err != nil {
			t.Fatal(err)
		}
	}
	size := func() int {
		g.instMu.Lock()
		defer g.instMu.Unlock()
		return len(g.added)
	}
	if got := size(); got != n {
		t.Fatalf("after AddTool on %d live servers: %d remembered, want %d (the test's premise)", n, got, n)
	}
	runtime.KeepAlive(servers)
	for i := 0; i < 50 && size() > 0; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	if got := size(); got != 0 {
		t.Errorf("after %d servers AddTool added to are gone and 50 GCs: %d still remembered, want 0", n, got)
	}
}
