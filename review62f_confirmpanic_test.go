package mcpguard_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview62fConfirmDescribePanicKeepsCount: the round that asks the
// human to confirm counts the call against the call rate (confirmStep's
// peek) before the prompt is written with the tool's Describe. A Describe
// that panicked there (its bug) left that count taken, in a Guard and in a
// stand-alone Confirm given opts.Limiter, though the call was refused and
// no tool ran: the caller's next call was refused RATE_LIMIT_EXCEEDED.
// 265d0a6 gives the count back for a dry run's Describe (chargedText now)
// and for the Limit steps outside a step; not for this one.
func TestReview62fConfirmDescribePanicKeepsCount(t *testing.T) {
	tools := map[string]mcpguard.ToolOptions{"wipe": {Describe: func(string, map[string]any) string {
		panic("review62f: Describe's bug")
	}}}
	newLim := func(t *testing.T) *limiter.Limiter {
		lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return lim
	}
	for _, tc := range []struct {
		name string
		h    func(t *testing.T, s *stub) mcp.ToolHandler
	}{
		{"guard", func(t *testing.T, s *stub) mcp.ToolHandler {
			g, err := mcpguard.New(stepPolicy(t), fixed(bob), &mcpguard.Options{
				Limiter: newLim(t), Logger: quiet, NoWriteAhead: true, Confirmer: testSigner(t, nil), Tools: tools,
			})
			if err != nil {
				t.Fatal(err)
			}
			h, err := g.Wrap(&mcp.Tool{Name: "wipe", InputSchema: json.RawMessage(`{"type":"object"}`)}, s.handle)
			if err != nil {
				t.Fatal(err)
			}
			return h
		}},
		{"chain", func(t *testing.T, s *stub) mcp.ToolHandler {
			opts := &mcpguard.Options{Limiter: newLim(t), Logger: quiet, Tools: tools}
			p, m := stepPolicy(t), must(t)
			return mcpguard.Chain(
				mcpguard.Recover(quiet),
				m(mcpguard.Audit(&memSink{}, opts)),
				mcpguard.Authenticate(fixed(bob)),
				m(mcpguard.Confirm(testSigner(t, nil), p, opts)),
			)(s.handle)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s stub
			h := tc.h(t, &s)
			if got := codeOfCall(t, h, req("wipe", `{}`)); got != string(mcpguard.CodeInternal) || s.ran != 0 {
				t.Fatalf("asking round: %q, the tool ran %d times; want INTERNAL, not run", got, s.ran)
			}
			// The hour's one call is still there: the panic's call was
			// refused before the tool and consumes nothing.
			if got := codeOfCall(t, h, req("wipe", `{}`)); got != string(mcpguard.CodeInternal) {
				t.Errorf("next call: %q, want INTERNAL again (Describe's bug), not a rate limit", got)
			}
		})
	}
}
