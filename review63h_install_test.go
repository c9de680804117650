package mcpguard_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview63hFailedInstallsLeaveNoLayers: Install's doc promises that an
// Install that failed leaves the server as it was and may be repeated. A
// program that retries its start (a supervisor loop, a configuration
// fixed and loaded again) makes a new Guard from the new Options each time
// and installs it on its server. Each failed Install left a receiving
// middleware on the server (the layer that catches a panic of the
// listing's session), which no later Install removes: after 50 failed
// starts every request to the server ran through 50 such layers (51 with
// the guard that finally installed), one more per failed start.
func TestReview63hFailedInstallsLeaveNoLayers(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	srv := mcp.NewServer(&mcp.Implementation{Name: "r63h", Version: "1"}, nil)
	layers := -1
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		pcs := make([]uintptr, 4096)
		frames := runtime.CallersFrames(pcs[:runtime.Callers(0, pcs)])
		layers = 0
		for {
			f, more := frames.Next()
			if strings.Contains(f.Function, "mcpguard.catchListing") {
				layers++
			}
			if !more {
				break
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	// A tool the policy has no rule for: Install fails.
	srv.AddTool(&mcp.Tool{Name: "unruled", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "echo", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	who := &mcpguard.Identity{Principal: &policy.Principal{Subject: "ada"}}
	newGuard := func() *mcpguard.Guard {
		g, err := mcpguard.New(pol, mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
			return who, nil
		}), &mcpguard.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	const failed = 50
	for i := range failed {
		if err := newGuard().Install(srv); err == nil {
			t.Fatalf("Install %d: nil error, want one for the tool without a rule", i)
		}
	}
	// The start fixed: the tool goes, and a new guard installs.
	srv.RemoveTools("unruled")
	if err := newGuard().Install(srv); err != nil {
		t.Fatal(err)
	}
	cs := connectVersion(t, srv, nil, "")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("echo: %v %+v", err, res)
	}
	if layers > 1 {
		t.Errorf("after %d failed Installs (each with a new Guard) and one that succeeded, a call ran through %d "+
			"layers of the listing's panic catcher: each failed Install left one on the server, which Install "+
			"promises to leave as it was; want at most 1", failed, layers)
	}
}
