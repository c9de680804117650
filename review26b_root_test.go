package mcpguard_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review26bAnyURIServer is a server whose CompletionHandler and
// UnsubscribeHandler are the go-sdk's own examples': the completion
// handler offers its values for any ref/resource (examples/server/completion),
// the UnsubscribeHandler takes any URI (return nil, as in the go-sdk's
// server example). withAdmin adds the admin tools and their UI resources.
// With echo, the handlers quote the URI they are asked about: the
// UnsubscribeHandler refuses every URI with an error naming it, the
// CompletionHandler offers it as a value.
func review26bAnyURIServer(withAdmin, echo bool) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			if echo {
				return fmt.Errorf("%w: not subscribed to %q", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "x"}, req.Params.URI)
			}
			return nil
		},
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			if echo {
				return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{req.Params.Ref.URI + "/x"}}}, nil
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"suggestion4", "suggestion5"}}}, nil
		},
	})
	addTools(s, &spy{})
	add := func(uri string) {
		s.AddResource(&mcp.Resource{URI: uri, Name: uri},
			func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
			})
	}
	s.AddTool(uiTool("open_app", nested(uiOpen)), okTool)
	add(uiOpen)
	if withAdmin {
		s.AddTool(uiTool("admin_app", nested(uiAdmin)), okTool)
		add(uiAdmin)
	}
	return s
}

// TestReview26bHiddenAnswersAsHandlerDoesAbsent: completion/complete of a
// ref/resource naming, and resources/unsubscribe from, the UI resource of
// a tool bob may not see are answered as the server's handler answers a
// URI it does not have, also when that handler takes any URI, as the
// go-sdk's own example handlers do. e1f08df answered them with the
// go-sdk's not-found error whatever the handler: where the handler offers
// values for (or unsubscribes from) any URI, bob's completion of
// "ui://admin/app" was refused while that of an absent URI got values, and
// his unsubscribe from it refused while that from a URI he never
// subscribed to succeeded: each told him that admin_app exists (before
// e1f08df, with these handlers, nothing did).
func TestReview26bHiddenAnswersAsHandlerDoesAbsent(t *testing.T) {
	var probes [][2]string
	for _, uri := range []string{uiAdmin, "UI://ADMIN/APP", "ui://admin/%61pp"} {
		probes = append(probes,
			[2]string{"completion/complete", `{"ref":{"type":"ref/resource","uri":` + review26Q(uri) + `},"argument":{"name":"name","value":"a"}}`},
			[2]string{"resources/unsubscribe", `{"uri":` + review26Q(uri) + `}`},
		)
	}
	for _, c := range []struct {
		legacy, echo bool
	}{{false, false}, {true, false}, {false, true}, {true, true}} {
		legacy := c.legacy
		t.Run(fmt.Sprintf("legacy=%v/echo=%v", c.legacy, c.echo), func(t *testing.T) {
			g := review26Connect(t, review26Guard(t, review26bAnyURIServer(true, c.echo)), bob, legacy)
			w := review26Connect(t, review26Guard(t, review26bAnyURIServer(false, c.echo)), bob, legacy)
			for _, p := range probes {
				if legacy == false && p[0] == "resources/unsubscribe" {
					continue // no unsubscribe on 2026-07-28
				}
				got := review26Corr.ReplaceAllString(g.response(p[0], p[1]), "${1}X")
				want := review26Corr.ReplaceAllString(w.response(p[0], p[1]), "${1}X")
				if got != want {
					t.Errorf("bob's %s %s:\n got %s\nwant %s", p[0], p[1], got, want)
				}
			}
		})
	}
}
