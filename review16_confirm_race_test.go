package mcpguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAcceptedStateSentAtOnce: a client sends the same accepted
// confirmation many times at once (a retry storm, or a replay racing the
// honest call). Exactly one runs the tool, whichever nonce store the
// signer has; every other is refused CONFIRMATION_REQUIRED, recorded as
// such, and given its charge back: the spend of the one that ran is
// the only one left on the limiter, and the only one in the records.
func TestAcceptedStateSentAtOnce(t *testing.T) {
	stores := map[string]func(t *testing.T) *confirm.Signer{
		"memory": func(t *testing.T) *confirm.Signer { return testSigner(t, nil) },
		"redis": func(t *testing.T) *confirm.Signer {
			return redisSigner(t, testsvc.StartRedis(t).Addr, "review16-race:", "0123456789abcdef0123456789abcdef")
		},
	}
	for name, signer := range stores {
		t.Run(name, func(t *testing.T) {
			pol, err := policy.New(policy.Config{
				Tools:          []policy.ToolRule{{Name: "wipe", Class: policy.Write, Confirm: true, Cost: 10}},
				WriteAllowlist: []string{"wipe"},
			})
			if err != nil {
				t.Fatal(err)
			}
			lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 1000, Window: time.Hour}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			sink := &memSink{}
			g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Confirmer: signer(t), Limiter: lim, Logger: quiet, Audit: sink})
			if err != nil {
				t.Fatal(err)
			}
			var ran atomic.Int64
			h, err := g.Wrap(&mcp.Tool{Name: "wipe", InputSchema: json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}}}`)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					ran.Add(1)
					return textResult("wiped"), nil
				})
			if err != nil {
				t.Fatal(err)
			}
			args := `{"target":"db-1"}`
			ask, err := h(context.Background(), req("wipe", args))
			if err != nil || ask.RequestState == "" {
				t.Fatalf("asking round: %v %s", err, mustJSON(ask))
			}
			const n = 16
			codes := make([]string, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				wg.Go(func() {
					<-start
					res, err := confirmRound(h, "wipe", args, ask.RequestState, "accept")
					codes[i] = codeOf(t, res, err)
				})
			}
			close(start)
			wg.Wait()
			ok := 0
			for i, c := range codes {
				switch c {
				case "":
					ok++
				case "CONFIRMATION_REQUIRED":
				default:
					t.Errorf("call %d: %q, want \"\" or CONFIRMATION_REQUIRED", i, c)
				}
			}
			if ok != 1 || ran.Load() != 1 {
				t.Errorf("%d calls with one accepted state at once: %d allowed, tool ran %d times; want exactly one", n, ok, ran.Load())
			}
			var allowed, refused int
			var spent float64
			for _, e := range sink.all() {
				if e.Phase != audit.PhaseOutcome {
					continue
				}
				spent += e.Cost
				switch {
				case e.Allowed:
					allowed++
				case e.Code == "CONFIRMATION_REQUIRED" && (strings.Contains(e.Detail, "already used") || e.Detail == "confirmation requested"):
					refused++
				default:
					t.Errorf("record %q %q", e.Code, e.Detail)
				}
			}
			if allowed != 1 || refused != n {
				t.Errorf("records: %d allowed, %d refused (asking round included); want 1 and %d", allowed, refused, n)
			}
			if spent < 10 || spent > 10.1 {
				t.Errorf("records' costs add up to %v, want 10 (the one call that ran; a late refund keeps a sliver)", spent)
			}
			// What stays charged: 10 of 1000 (and, on the refused calls,
			// the sliver a refund made some milliseconds late keeps: see
			// limiter.Refund), so a spend of 995 more does not fit and one
			// of 985 does.
			if d := lim.AllowAt(context.Background(), time.Now(), limiter.Request{User: "bob", Tool: "x", Cost: 995}); d.Allowed {
				t.Errorf("a spend of 995 after the storm was allowed: the call that ran was not charged")
			}
			if d := lim.AllowAt(context.Background(), time.Now(), limiter.Request{User: "bob", Tool: "x", Cost: 985}); !d.Allowed {
				t.Errorf("a spend of 985 after the storm was refused: the refused calls kept their charge (%+v)", d)
			}
		})
	}
}
