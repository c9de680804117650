package mcpguard

import (
	"context"
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview44bWrappedForgotten: the entries the guard keeps of the tools
// Wrap guarded, for SetPolicy to check, go once their handlers are
// collected: a server that wraps a tool per session or request does not
// grow the guard.
func TestReview44bWrappedForgotten(t *testing.T) {
	g := review14BobGuard(t)
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	wrapped := func() int {
		g.polMu.Lock()
		defer g.polMu.Unlock()
		return len(g.wrapped)
	}
	for range 100 {
		if _, err := g.Wrap(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}, ok); err != nil {
			t.Fatal(err)
		}
	}
	if n := wrapped(); n == 0 {
		t.Fatal("the guard keeps no entry of the tools it wraps")
	}
	// The cleanups run on their own goroutine after a collection.
	deadline := time.Now().Add(5 * time.Second)
	for wrapped() > 0 && time.Now().Before(deadline) {
		runtime.GC()
		runtime.Gosched()
	}
	if n := wrapped(); n != 0 {
		t.Errorf("the guard keeps %d entries of the 100 wrapped tools collected, want 0", n)
	}
}
