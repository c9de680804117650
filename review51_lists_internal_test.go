package mcpguard

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview51InstallLearnsToolsQuiet: Install reads the server's
// capabilities from its own listing's handshake: a server whose tools
// capability turns listChanged off is sent no tools/list_changed for a new
// policy; one that says nothing of it, or turns it on, is.
func TestReview51InstallLearnsToolsQuiet(t *testing.T) {
	for name, tc := range map[string]struct {
		caps *mcp.ServerCapabilities
		want bool
	}{
		"default":          {nil, false},
		"list_changed_off": {&mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: false}}, true},
		"list_changed_on":  {&mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}, false},
	} {
		g := review14BobGuard(t)
		srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ServerOptions{Capabilities: tc.caps})
		srv.AddTool(&mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		if err := g.Install(srv); err != nil {
			t.Fatal(err)
		}
		if got := g.lc.target.Load().quiet; got != tc.want {
			t.Errorf("%s: quiet = %v, want %v", name, got, tc.want)
		}
	}
}
