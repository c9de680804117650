package mcpguard_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview63iStepRefusalThroughRecover: a stand-alone step's refusal
// (Limit's, with Options.SchemaSafeErrors) passes through the Recover
// outside as the step gave it: without StructuredContent, which the
// SchemaSafeErrors doc promises for every refusal of the stand-alone steps
// past resolution. A step's call state has no request (begin sets no
// c.req), so its mark named none, and Recover took the step's own refusal
// for one a handler returned and rendered it again, StructuredContent and
// all (a client that checks the output schema throws it away).
func TestReview63iStepRefusalThroughRecover(t *testing.T) {
	p := r56Policy(t)
	l, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	limitStep, err := mcpguard.Limit(l, p, &mcpguard.Options{SchemaSafeErrors: true})
	if err != nil {
		t.Fatal(err)
	}
	authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return bob, nil })
	for _, withRecover := range []bool{false, true} {
		steps := []mcpguard.Middleware{mcpguard.Authenticate(authn), limitStep}
		if withRecover {
			steps = append([]mcpguard.Middleware{mcpguard.Recover(nil)}, steps...)
		}
		h := mcpguard.Chain(steps...)(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("ok"), nil
		})
		var res *mcp.CallToolResult
		for range 2 {
			req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "r56_read", Arguments: []byte(`{"text":"y"}`)}}
			if res, err = h(context.Background(), req); err != nil {
				t.Fatal(err)
			}
		}
		if res == nil || !res.IsError {
			t.Fatalf("recover %v: the second call was not refused: %+v", withRecover, res)
		}
		if d, _ := mcpguard.DenialOf(res, nil); d == nil || d.Code != mcpguard.CodeRateLimitExceeded {
			t.Errorf("recover %v: refusal %v, want RATE_LIMIT_EXCEEDED", withRecover, d)
		}
		if res.StructuredContent != nil {
			t.Errorf("recover %v: the Limit step's refusal (SchemaSafeErrors) has StructuredContent %s",
				withRecover, res.StructuredContent)
		}
	}
}
