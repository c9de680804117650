package mcpguard

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview14ViewsAreBounded: the guard keeps a view per session that
// listed the tools; once sessions end and are collected, their views go,
// so a server that sees many short sessions (stateless HTTP makes one per
// request) does not grow.
func TestReview14ViewsAreBounded(t *testing.T) {
	g := review14BobGuard(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const sessions = 50
	var open []func()
	for range sessions {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatal(err)
		}
		open = append(open, func() { cs.Close(); ss.Close() })
	}
	count := func() int {
		g.views.mu.RLock()
		defer g.views.mu.RUnlock()
		return len(g.views.m)
	}
	runtime.GC()
	if n := count(); n != sessions {
		t.Fatalf("%d views while %d sessions that listed the tools are open, want %d", n, sessions, sessions)
	}
	for _, end := range open {
		end()
	}
	open = nil
	deadline := time.Now().Add(10 * time.Second)
	for count() > 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := count(); n > 0 {
		t.Errorf("%d views remain after all %d sessions ended and were collected", n, sessions)
	}
}

// review14BobGuard returns a guard, not installed, of a policy with one
// read tool "t", every caller bob, logging nothing.
func review14BobGuard(t *testing.T) *Guard {
	t.Helper()
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "t", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	who := AuthenticatorFunc(func(context.Context, mcp.Request) (*Identity, error) {
		return &Identity{Principal: &policy.Principal{Subject: "bob"}}, nil
	})
	g, err := New(pol, who, &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return g
}
