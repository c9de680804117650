package mcpguard_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview63ChainHandlerReturnsOtherRefusal: a write's handler that
// called another guarded tool in process (its own chain of steps, over
// the same context) and returned that tool's refusal as its result was
// answered by the chain as the chain's own refusal: retryable, as the
// other tool's rate limit was, though the write's handler had started and
// may have written. A Guard answers it as the handler's refusal, not
// retryable. The guard's mark on a refusal now names the request it
// refused, so that a step tells its own chain's refusals from one a
// handler returned (a router that passes its request to an inner chain
// still has the inner chain's refusals taken as its own).
func TestReview63ChainHandlerReturnsOtherRefusal(t *testing.T) {
	p := r56Policy(t)
	other, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := other.AllowAt(context.Background(), time.Now(), limiter.Request{User: "bob", Calls: 1}); !d.Allowed {
		t.Fatal(d)
	} else {
		other.Release(d)
	}
	limitStep, err := mcpguard.Limit(other, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return bob, nil })
	lookup := mcpguard.Chain(mcpguard.Authenticate(authn), limitStep)(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		t.Error("the other tool ran past its limit")
		return textResult("ok"), nil
	})
	r62hCompare(t, r62hSetup{handler: func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return lookup(ctx, &mcp.CallToolRequest{Session: req.Session, Params: &mcp.CallToolParamsRaw{Name: "r56_read", Arguments: []byte(`{"text":"y"}`)}})
	}}, "r56_write")
}
