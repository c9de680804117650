package mcpguard_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview25iHandlerPanicsRefused: through Install, a prompt's, a
// completion's or a custom method's handler that panics is refused with a
// JSON-RPC error (-32603) and the session goes on, as a tool's (Recover)
// and a resource's (readResource) already were: the go-sdk recovers none,
// and the panic ended the process.
func TestReview25iHandlerPanicsRefused(t *testing.T) {
	sopts := &mcp.ServerOptions{
		CompletionHandler: func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			panic("review25i: completion")
		},
	}
	h := newServerHarness(t, basePolicy(false), sopts, func(s *mcp.Server) {
		s.AddPrompt(&mcp.Prompt{Name: "boom", Arguments: []*mcp.PromptArgument{{Name: "x"}}}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			panic("review25i: prompt")
		})
		err := mcp.AddReceivingCustomMethod(s, "acme/data", func(context.Context, *mcp.ServerSession, *review24cParams) (*review24cResult, error) {
			panic("review25i: custom method")
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			cs := review24cConnect(t, h, bob, v)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "boom"})
			review24cRefused(t, "prompts/get", err)
			_, err = cs.Complete(ctx, &mcp.CompleteParams{
				Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "boom"},
				Argument: mcp.CompleteParamsArgument{Name: "x", Value: "a"},
			})
			review24cRefused(t, "completion/complete", err)
			_, err = mcp.CallCustomMethod[*review24cParams, *review24cResult](ctx, cs, "acme/data", &review24cParams{Kind: "x"})
			review24cRefused(t, "acme/data", err)
			review24cAlive(t, cs)
		})
	}
}
