package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview26LimitForUnknownTool: a limit for a tool the policy has no
// rule for (a typo, no Default rule) caps nothing, and New refuses it, as
// mcpguard.New does; a limit for another spelling of a known tool, or any
// limit under a Default rule, is accepted.
func TestReview26LimitForUnknownTool(t *testing.T) {
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "refund_order", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	lim := func(tool string) *limiter.Limiter {
		l, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Tool: tool, Max: 1, Window: time.Minute}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	_, err = New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Policy: p, Limiter: lim("refund_ordr")})
	if err == nil || !strings.Contains(err.Error(), `"refund_ordr"`) {
		t.Fatalf("New with a limit for refund_ordr = %v, want an error naming it", err)
	}
	for _, tool := range []string{"refund_order", "Refund_Order", ""} {
		if _, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Policy: p, Limiter: lim(tool)}); err != nil {
			t.Errorf("New with a limit for %q: %v", tool, err)
		}
	}
	if _, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Limiter: lim("anything")}); err != nil {
		t.Errorf("New with the default policy (a Default rule) and a limit for any tool: %v", err)
	}
}
