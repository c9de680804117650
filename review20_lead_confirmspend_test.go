package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestConfirmAskingRoundMeetsTheSpendCap checks that the round that asks
// the human to confirm a call checks the call's cost against the spend
// caps, without spending it: a call whose cost does not fit now is refused
// with the SPEND_LIMIT_EXCEEDED and wait the confirmed round would get,
// before anyone is asked, and counts no call. For the Guard and for the
// stand-alone Confirm step with a Limit inside it. Before, the asking round
// counted one call and checked no cost, so a human was asked to confirm a
// call the caps then refused.
func TestConfirmAskingRoundMeetsTheSpendCap(t *testing.T) {
	six := func(map[string]any) (float64, error) { return 6, nil }
	tools := map[string]mcpguard.ToolOptions{"wipe": {Cost: six}}
	newLimiter := func(t *testing.T) *limiter.Limiter {
		l, err := limiter.New([]limiter.Limit{
			{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour},
			{Kind: limiter.Rate, Scope: limiter.User, Max: 5, Window: time.Hour},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	setups := map[string]func(t *testing.T, lim *limiter.Limiter, s *stub) mcp.ToolHandler{
		"guard": func(t *testing.T, lim *limiter.Limiter, s *stub) mcp.ToolHandler {
			g, err := mcpguard.New(stepPolicy(t), fixed(bob), &mcpguard.Options{
				Limiter: lim, Tools: tools, Logger: quiet, Confirmer: testSigner(t, nil), Audit: &memSink{},
				Now: func() time.Time { return dsT0 },
			})
			if err != nil {
				t.Fatal(err)
			}
			h, err := g.Wrap(&mcp.Tool{Name: "wipe", InputSchema: json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}}}`)}, s.handle)
			if err != nil {
				t.Fatal(err)
			}
			return h
		},
		"steps": func(t *testing.T, lim *limiter.Limiter, s *stub) mcp.ToolHandler {
			p, m := stepPolicy(t), must(t)
			opts := &mcpguard.Options{Limiter: lim, Tools: tools, Logger: quiet, Now: func() time.Time { return dsT0 }}
			return mcpguard.Chain(
				mcpguard.Authenticate(fixed(bob)),
				m(mcpguard.Confirm(testSigner(t, nil), p, opts)),
				m(mcpguard.Limit(lim, p, opts)),
			)(s.handle)
		},
	}
	const args = `{"target":"db-1"}`
	for name, setup := range setups {
		t.Run(name, func(t *testing.T) {
			lim := newLimiter(t)
			var s stub
			h := setup(t, lim, &s)
			ask, err := h(context.Background(), req("wipe", args))
			if err != nil || ask.RequestState == "" {
				t.Fatalf("first asking round (6 of 10 fits): %v %s", err, mustJSON(ask))
			}
			res, err := confirmRound(h, "wipe", args, ask.RequestState, "accept")
			if got := codeOf(t, res, err); got != "" || s.ran != 1 {
				t.Fatalf("confirmed round: %q, handler ran %d times; want it run once (6 of 10 spent)", got, s.ran)
			}
			// 6 does not fit in the 4 left: refused before the human is
			// asked, as the confirmed round would be (2 units of 10 an
			// hour away: 12 minutes).
			for i := range 2 {
				res, err = h(context.Background(), req("wipe", args))
				if err != nil {
					t.Fatal(err)
				}
				var de *mcpguard.DenialError
				errors.As(res.GetError(), &de)
				if res.RequestState != "" || res.InputRequests != nil || de == nil || de.Code != mcpguard.CodeSpendLimitExceeded || de.RetryAfter != 12*time.Minute {
					t.Errorf("asking round %d for 6 with 4 left: %s, denial %+v; want SPEND_LIMIT_EXCEEDED after 12m0s and no one asked", i, mustJSON(res), de)
				}
			}
			// The refused rounds counted no call: the asking round that
			// fitted leaves four of the five (the confirmed round counts
			// none).
			for i, want := range []bool{true, true, true, true, false} {
				d := lim.AllowAt(context.Background(), dsT0, limiter.Request{User: "bob", Calls: 1})
				if d.Allowed != want {
					t.Errorf("call %d after the refused asking rounds: allowed %v, want %v", i, d.Allowed, want)
				}
				lim.Release(d)
			}
			if s.ran != 1 {
				t.Errorf("the handler ran %d times, want once", s.ran)
			}
		})
	}
}
