package mcpguard_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
)

// TestReview59WriteAfterClientLeft: a write whose client cancels the call
// while it runs runs to its end (its context is detached), and its record
// said only allowed, as for a write whose result the client read; it says
// the client went away and the write ran to its end now. A read that
// completes is recorded as ever.
func TestReview59WriteAfterClientLeft(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "put", Class: policy.Write}, {Name: "get", Class: policy.Read}},
		WriteAllowlist: []string{"put"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := token.Parse([]byte(`{"tok-ada": {"sub": "ada", "role": "staff"}}`))
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	g, err := mcpguard.New(pol, mcpguard.FromToken("tok-ada", tokens), &mcpguard.Options{Audit: sink, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	handler := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		<-release
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	}
	srv.AddTool(&mcp.Tool{Name: "put", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{}}, handler)
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	// left is closed when the call's own context (its client's) ends: seen
	// outside the guard, which runs a write on a detached context.
	left := make(chan struct{})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				go func() { <-ctx.Done(); close(left) }()
			}
			return next(ctx, method, req)
		}
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	defer free() // before the sessions close, so that a failed wait ends
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "put", Arguments: map[string]any{}})
		if err == nil {
			t.Errorf("the call ended before its cancellation: %s", mustJSON(res))
		}
		close(done)
	}()
	wait := func(what string, c <-chan struct{}) {
		t.Helper()
		select {
		case <-c:
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s in 5 s", what)
		}
	}
	wait("start of the write", started)
	cancel()
	wait("end of the client's call", done)
	wait("end of the call's context on the server", left) // before the write ends
	free()
	if err := g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	var out audit.Event
	for _, e := range sink.all() {
		if e.Tool == "put" && e.Phase == audit.PhaseOutcome {
			out = e
		}
	}
	if !out.Allowed || out.Detail != "the client went away (the call's context ended) while the write ran; it ran to its end" {
		t.Errorf("the record of a write whose client left: %+v, want allowed, saying the client went away", out)
	}
}
