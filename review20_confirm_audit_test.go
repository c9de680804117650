package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestConfirmStepAuditsAsTheGuard runs the same confirmation decisions
// through a Guard and through the chain Audit, Authenticate, Confirm,
// Limit (given the same options) and compares their audit records, which the
// steps' doc says are the Guard's: the round that asks (recorded as
// CONFIRMATION_REQUIRED "confirmation requested", not as an allowed call:
// the tool did not run), a decline, an accepted call, a replay, a
// malformed state, and an asking round the spend cap refuses. Before, the
// chain recorded the asking round as allowed, and no decision's detail.
func TestConfirmStepAuditsAsTheGuard(t *testing.T) {
	six := func(map[string]any) (float64, error) { return 6, nil }
	type rec struct {
		Allowed      bool
		Code, Detail string
		Cost         float64
	}
	run := func(t *testing.T, chain, protocolErrors bool) []rec {
		lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		sink := &memSink{}
		var s stub
		opts := &mcpguard.Options{
			Limiter: lim, Logger: quiet, Now: func() time.Time { return dsT0 },
			Tools:          map[string]mcpguard.ToolOptions{"wipe": {Cost: six}},
			ProtocolErrors: protocolErrors,
		}
		var h mcp.ToolHandler
		if chain {
			p, m := stepPolicy(t), must(t)
			h = mcpguard.Chain(
				m(mcpguard.Audit(sink, opts)),
				mcpguard.Authenticate(fixed(bob)),
				m(mcpguard.Confirm(testSigner(t, nil), p, opts)),
				m(mcpguard.Limit(lim, p, opts)),
			)(s.handle)
		} else {
			o := *opts
			o.Audit, o.Confirmer = sink, testSigner(t, nil)
			g, err := mcpguard.New(stepPolicy(t), fixed(bob), &o)
			if err != nil {
				t.Fatal(err)
			}
			h, err = g.Wrap(&mcp.Tool{Name: "wipe", InputSchema: json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}}}`)}, s.handle)
			if err != nil {
				t.Fatal(err)
			}
		}
		const args = `{"target":"db-1"}`
		ask := func() string {
			t.Helper()
			res, err := h(context.Background(), req("wipe", args))
			if err != nil || res.RequestState == "" {
				t.Fatalf("asking round: %q %s", codeOf(t, res, err), mustJSON(res))
			}
			return res.RequestState
		}
		confirmRound(h, "wipe", args, ask(), "decline")
		st := ask()
		confirmRound(h, "wipe", args, st, "accept")
		confirmRound(h, "wipe", args, st, "accept")
		confirmRound(h, "wipe", args, "AQAAAAB.x", "accept")
		h(context.Background(), req("wipe", args)) // 6 does not fit in 4
		if s.ran != 1 {
			t.Errorf("the handler ran %d times, want once", s.ran)
		}
		var out []rec
		for _, e := range sink.all() {
			if e.Phase != audit.PhaseOutcome {
				continue // the Guard's write-ahead intent
			}
			out = append(out, rec{e.Allowed, e.Code, e.Detail, e.Cost})
		}
		return out
	}
	// In protocol-error mode too: refusals are JSON-RPC errors then, and
	// the Audit middleware kept no detail of the step that refused.
	for _, pe := range []bool{false, true} {
		guard, chain := run(t, false, pe), run(t, true, pe)
		if diff := cmp.Diff(guard, chain); diff != "" {
			t.Errorf("ProtocolErrors %v: the chain's records differ from the Guard's (-guard +chain):\n%s", pe, diff)
		}
		if len(guard) != 7 || guard[0].Code != string(mcpguard.CodeConfirmationRequired) || guard[6].Code != string(mcpguard.CodeSpendLimitExceeded) {
			t.Errorf("ProtocolErrors %v: the Guard's records: %s", pe, fmt.Sprint(guard))
		}
	}
}
