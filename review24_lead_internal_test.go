package mcpguard

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview24InstallDoesNotHang: Install lists the server's tools through
// an in-memory client, and go-sdk v1.8.0 sends no answer it cannot encode
// (a tool with a NaN in its _meta): Install waited for ever, logging
// nothing. It fails after installWait, saying why, and changes nothing.
func TestReview24InstallDoesNotHang(t *testing.T) {
	defer func(w time.Duration) { installWait = w }(installWait)
	installWait = 300 * time.Millisecond
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "x", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(pol, AuthenticatorFunc(func(context.Context, mcp.Request) (*Identity, error) { return nil, nil }),
		&Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv.AddTool(&mcp.Tool{Name: "x", InputSchema: json.RawMessage(`{"type":"object"}`), Meta: mcp.Meta{"n": math.NaN()}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	done := make(chan error, 1)
	go func() { done <- g.Install(srv) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "did not answer") {
			t.Errorf("Install: %v; want an error saying the listing got no answer", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Install did not return")
	}
	if g.server != nil {
		t.Error("a failed Install left the guard installed")
	}
}
