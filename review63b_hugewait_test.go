package mcpguard_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview63bHugeRetryAfter: a limiter store of the user's that denies a
// call with an enormous wait (time.Duration(math.MaxInt64), a "forever"
// that the Batch contract lets through: any positive RetryAfter) made the
// guard write retry_after_seconds 9223372037, one past the largest a
// time.Duration holds, and DenialOf, reading the refusal back, did not take
// it for a refusal at all: the client was told nothing it could read,
// though DenialOf promises to read what DenialError.Result writes.
func TestReview63bHugeRetryAfter(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "r", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	store := limiter.StoreFunc(func(_ context.Context, _ time.Time, b *limiter.Batch) error {
		if !b.Release && !b.Refund {
			b.Denied, b.RetryAfter = 0, time.Duration(math.MaxInt64)
		}
		return nil
	})
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, &limiter.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	h := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		t.Error("the handler ran")
		return &mcp.CallToolResult{}, nil
	}
	for _, rpc := range []bool{false, true} {
		g, err := mcpguard.New(pol, auth, &mcpguard.Options{Limiter: lim, ProtocolErrors: rpc})
		if err != nil {
			t.Fatal(err)
		}
		w, err := g.Wrap(&mcp.Tool{Name: "r", InputSchema: json.RawMessage(`{"type":"object"}`)}, h)
		if err != nil {
			t.Fatal(err)
		}
		res, err := w(context.Background(), r61cCall("r"))
		d, ok := mcpguard.DenialOf(res, err)
		if !ok {
			var text string
			if res != nil && len(res.Content) == 1 {
				text = res.Content[0].(*mcp.TextContent).Text
			}
			t.Errorf("protocol errors %v: DenialOf does not read the refusal: %s %v", rpc, text, err)
			continue
		}
		if d.Code != mcpguard.CodeRateLimitExceeded {
			t.Errorf("protocol errors %v: code %s", rpc, d.Code)
		}
	}
	// The same without a guard: what Result writes, DenialOf reads.
	d := &mcpguard.DenialError{Code: mcpguard.CodeRateLimitExceeded, Message: "m", RetryAfter: math.MaxInt64}
	if _, ok := mcpguard.DenialOf(d.Result(), nil); !ok {
		t.Error("DenialOf does not read DenialError.Result of a RetryAfter of math.MaxInt64")
	}
}
