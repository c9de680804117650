package mcpguard_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestConfirmAskingRoundLogsLimiterFailure checks that the round that asks
// the human, which asks the limiter about the call (its rate, and its cost
// as a peek), logs the limiter's failure as the confirmed round does
// ("mcpguard: limiter failed", at Error): with the store down and the
// limiter failing closed, every call of a confirmed tool is refused there,
// and with FailOpenWrites it is let through; either way the operator is
// told. Before, the asking round logged nothing. For the Guard and the
// stand-alone Confirm step.
func TestConfirmAskingRoundLogsLimiterFailure(t *testing.T) {
	for _, open := range []bool{false, true} {
		for _, where := range []string{"guard", "steps"} {
			t.Run(where+"/fail_open_writes_"+strconv.FormatBool(open), func(t *testing.T) {
				srv, st := dsRedis(t)
				lim := dsSpendLimiter(t, st, &limiter.Options{FailOpenWrites: open})
				logs := &lockedBuffer{}
				log := slog.New(slog.NewTextHandler(logs, nil))
				six := func(map[string]any) (float64, error) { return 6, nil }
				opts := &mcpguard.Options{
					Limiter: lim, Logger: log, Now: func() time.Time { return dsT0 },
					Tools: map[string]mcpguard.ToolOptions{"wipe": {Cost: six}},
				}
				var s stub
				var h mcp.ToolHandler
				if where == "guard" {
					o := *opts
					o.Confirmer = testSigner(t, nil)
					g, err := mcpguard.New(stepPolicy(t), fixed(bob), &o)
					if err != nil {
						t.Fatal(err)
					}
					h, err = g.Wrap(&mcp.Tool{Name: "wipe", InputSchema: json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}}}`)}, s.handle)
					if err != nil {
						t.Fatal(err)
					}
				} else {
					p, m := stepPolicy(t), must(t)
					h = mcpguard.Chain(
						mcpguard.Authenticate(fixed(bob)),
						m(mcpguard.Confirm(testSigner(t, nil), p, opts)),
						m(mcpguard.Limit(lim, p, opts)),
					)(s.handle)
				}
				srv.Stop()
				res, err := h(context.Background(), req("wipe", `{"target":"db-1"}`))
				got := codeOf(t, res, err)
				if open && (got != "" || res.RequestState == "") || !open && got != string(mcpguard.CodeRateLimitExceeded) {
					t.Errorf("asking round with the limiter's store down: %q %s", got, mustJSON(res))
				}
				if l := logs.String(); !strings.Contains(l, "level=ERROR msg=\"mcpguard: limiter failed\"") {
					t.Errorf("the limiter's failure in the asking round was not logged; logs:\n%s", l)
				}
			})
		}
	}
}
