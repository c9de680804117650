package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGuardWait: at shutdown a server closes its audit sink after the
// calls under way have ended, or their outcome records are refused by the
// closed sink. Over Streamable HTTP a call goes on in its MCP session
// after the HTTP request that carried it has ended, so http.Server's
// Shutdown does not wait for it: Wait does.
func TestGuardWait(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "slow", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Audit: sink, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Wait(context.Background()); err != nil {
		t.Fatalf("Wait on an idle guard: %v", err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(entered)
			<-release
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	cs := connectPlain(t, srv, nil)
	go call(t, cs, "slow", map[string]any{})
	<-entered

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := g.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with a call under way: %v, want the context's deadline", err)
	}
	time.AfterFunc(100*time.Millisecond, func() { close(release) })
	if err := g.Wait(context.Background()); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	var outcomes int
	for _, e := range sink.all() {
		if e.Phase == audit.PhaseOutcome && e.Tool == "slow" {
			outcomes++
		}
	}
	if outcomes != 1 {
		t.Errorf("%d outcome records of the call when Wait returned, want 1", outcomes)
	}
}
