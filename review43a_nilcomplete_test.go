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
	g := review26Connect(t, review26Guard(t, server(true)), bob, true)
	w := review26Connect(t, review26Guard(t, server(false)), bob, true)
	params := `{"ref":{"type":"ref/resource","uri":"` + uiAdmin + `"},"argument":{"name":"name","value":""}}`
	got := review26Corr.ReplaceAllString(g.response("completion/complete", params), "${1}X")
	want := review26Corr.ReplaceAllString(w.response("completion/complete", params), "${1}X")
	if got != want {
		t.Errorf("bob's completion/complete %s:\n got %s\nwant %s", params, got, want)
	}
}
