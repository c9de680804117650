package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Many callers at once through an installed guard, while tools are added:
// every call gets one audit record, the global in-flight cap holds, and a
// refused call leaves nothing held.
func TestReview11ConcurrentCalls(t *testing.T) {
	cfg := basePolicy(false)
	cfg.Default = &policy.ToolRule{Class: policy.Read}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 3}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, cfg, &mcpguard.Options{Limiter: lim})
	var cur, peak atomic.Int64
	gate := make(chan struct{})
	h.srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n := cur.Add(1)
			defer cur.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			<-gate
			return textResult("ok"), nil
		})
	var sessions []*mcp.ClientSession
	for _, v := range protocolVersions {
		sessions = append(sessions, h.connect(alice, clientOpts{version: v}), h.connect(bob, clientOpts{version: v}))
	}
	const perSession = 20
	var wg sync.WaitGroup
	var ok, capped, other atomic.Int64
	for i, cs := range sessions {
		for j := range perSession {
			wg.Go(func() {
				name := "slow"
				switch j % 5 {
				case 1:
					name = "echo"
				case 2:
					name = "admin_stats"
				case 3:
					name = fmt.Sprintf("late_%d_%d", i, j)
				}
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
				switch {
				case err != nil:
					other.Add(1)
				case errorCode(t, res) == "CONCURRENCY_LIMIT_EXCEEDED":
					capped.Add(1)
				case !res.IsError:
					ok.Add(1)
				default:
					other.Add(1)
				}
			})
			if j%7 == 0 {
				h.srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("late_%d_%d", i, j), InputSchema: json.RawMessage(`{"type":"object"}`)},
					func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
						return textResult("late"), nil
					})
			}
		}
	}
	close(gate)
	wg.Wait()
	if p := peak.Load(); p > 3 {
		t.Errorf("%d calls of slow ran at once, cap 3", p)
	}
	total := int64(len(sessions) * perSession)
	if got := int64(len(h.sink.all())); got != total {
		t.Errorf("%d audit records for %d calls", got, total)
	}
	if ok.Load()+capped.Load()+other.Load() != total {
		t.Errorf("ok %d capped %d other %d, total %d", ok.Load(), capped.Load(), other.Load(), total)
	}
	// Nothing stays held.
	res, err := call(t, sessions[0], "echo", map[string]any{"text": "x"})
	if err != nil || res.IsError {
		t.Errorf("after the burst: %+v, %v (code %q)", res, err, errorCode(t, res))
	}
}
