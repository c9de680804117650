package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview29cFoldedEntryOverSpend: a write allowlist entry that is a
// tool's name only under folding ("Refund" beside "refund", as the policy
// asks) is charged the larger of the tool's Cost and the Default rule's; a
// spend limit below that refused every call by it for ever, and New and
// SetPolicy accepted it.
func TestReview29cFoldedEntryOverSpend(t *testing.T) {
	p, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "refund", Class: policy.Write, Cost: 1}},
		Default:        &policy.ToolRule{Class: policy.Write, Cost: 10},
		WriteAllowlist: []string{"refund", "Refund"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 5, Window: time.Minute}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const want = `a call under tool "Refund" costs 10`
	if _, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Policy: p, Limiter: lim}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("New: %v, want an error with %q", err, want)
	}
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Limiter: lim})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetPolicy(p); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("SetPolicy: %v, want an error with %q", err, want)
	}
	// A Cost function may price the calls lower.
	if _, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Policy: p, Limiter: lim, Cost: func(string, policy.Args) float64 { return 1 }}); err != nil {
		t.Errorf("New with Options.Cost: %v", err)
	}
}
