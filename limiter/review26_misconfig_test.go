package limiter_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview26LimitToolNotAPattern: a limit's Tool is one tool's exact
// name, so Tool "*" or "admin_*" caps only a tool of that very name, which
// no MCP tool has (their names are A-Z a-z 0-9 _ - .), never every tool or
// every admin_ tool as its author meant. New refuses them, naming the
// tool; the zero Tool is the limit for every tool.
func TestReview26LimitToolNotAPattern(t *testing.T) {
	for _, tool := range []string{"*", "admin_*", "a*b"} {
		_, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Tool: tool, Max: 10, Window: time.Minute}}, nil)
		if err == nil || !strings.Contains(err.Error(), "tool") {
			t.Errorf("New(limit for tool %q) = %v, want an error about the tool", tool, err)
		}
	}
	for _, tool := range []string{"", "refund", "admin_reset", "ſearch", "see.all-2", "x\xff"} {
		if _, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Tool: tool, Max: 10, Window: time.Minute}}, nil); err != nil {
			t.Errorf("New(limit for tool %q) = %v", tool, err)
		}
	}
}
