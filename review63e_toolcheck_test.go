package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rv63eBest returns the shortest of three runs of the func setup returns
// (setup itself is not timed).
func rv63eBest(setup func() func()) time.Duration {
	best := time.Duration(1<<63 - 1)
	for range 3 {
		f := setup()
		start := time.Now()
		f()
		best = min(best, time.Since(start))
	}
	return best
}

// rv63eSetPolicy returns the shortest of three SetPolicy calls, each with
// a new policy of the same rules, on a guard installed on a server of n
// closed-schema tools.
func rv63eSetPolicy(t *testing.T, n int) time.Duration {
	t.Helper()
	rules := make([]policy.ToolRule, n)
	for i := range n {
		rules[i] = policy.ToolRule{Name: fmt.Sprintf("get_item_%05d", i), Class: policy.Read}
	}
	newPol := func() *policy.Policy {
		pol, err := policy.New(policy.Config{Tools: rules})
		if err != nil {
			t.Fatal(err)
		}
		return pol
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, nil)
	for _, r := range rules {
		s.AddTool(&mcp.Tool{Name: r.Name, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
			InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"additionalProperties":false}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	g, err := mcpguard.New(newPol(), mcpguard.FromTokenInfo(nil), &mcpguard.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(s); err != nil {
		t.Fatal(err)
	}
	return rv63eBest(func() func() {
		p := newPol()
		return func() {
			if err := g.SetPolicy(p); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestSetPolicyManyClosedToolsLinear: SetPolicy checks each installed
// tool against the new policy; for a tool whose input schema names its
// fields (additionalProperties false, as the go-sdk infers for a typed
// tool), toolEntry.check lists and sorts every tool rule of the policy
// (slices.Contains(p.Tools(), name)) to learn whether the tool has a rule
// of its own, so the check of all tools is quadratic in them: with 5,000
// such tools SetPolicy took 4.3 s, holding the guard's policy lock, and
// Install spends as long in the same check (so do Wrap and AddTool, a
// sort of every rule for each tool).
func TestSetPolicyManyClosedToolsLinear(t *testing.T) {
	const n = 300
	small := rv63eSetPolicy(t, n)
	big := rv63eSetPolicy(t, 4*n)
	t.Logf("SetPolicy with %d tools: %v; with %d: %v (%.1fx)", n, small, 4*n, big, float64(big)/float64(small))
	if big > 8*small && big > 20*time.Millisecond {
		t.Errorf("SetPolicy with %d closed-schema tools took %v, with %d %v: %.1fx for 4x the tools (quadratic)",
			n, small, 4*n, big, float64(big)/float64(small))
	}
}
