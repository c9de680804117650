package mcpguard_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview43aNilCompletionOfHidden: a CompletionHandler that answers a
// nil result with no error is answered for bob's completion of a hidden UI
// resource as for one the server does not have.
func TestReview43aNilCompletionOfHidden(t *testing.T) {
	server := func(withAdmin bool) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ServerOptions{
			CompletionHandler: func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
				return nil, nil
			},
		})
		s.AddTool(uiTool("open_app", nested(uiOpen)), okTool)
		if withAdmin {
			s.AddTool(uiTool("admin_app", nested(uiAdmin)), okTool)
		}
		return s
	}
	params := `{"ref":{"type":"ref/resource","uri":"` + uiAdmin + `"},"argument":{"name":"name","value":""}}`
	review26SameOn(t, server, true, [][2]string{{"completion/complete", params}})
}
