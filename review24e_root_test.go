package mcpguard_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview24eTypedNilResultRefused: a custom method's handler returning
// a nil *T and no error (a common Go slip) made go-sdk v1.8.0 read the
// result's _meta after every middleware and panic, ending the process. The
// guard refuses such a result with -32603, and the session goes on.
func TestReview24eTypedNilResultRefused(t *testing.T) {
	h := newServerHarness(t, basePolicy(false), nil, func(s *mcp.Server) {
		err := mcp.AddReceivingCustomMethod(s, "acme/data", func(context.Context, *mcp.ServerSession, *review24cParams) (*review24cResult, error) {
			return nil, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			cs := review24cConnect(t, h, bob, v)
			o := <-review24cAsync(func(ctx context.Context) (any, error) {
				return mcp.CallCustomMethod[*review24cParams, *review24cResult](ctx, cs, "acme/data", &review24cParams{Kind: "ok"})
			})
			review24cRefused(t, "acme/data", o.err)
			review24cAlive(t, cs)
		})
	}
}
