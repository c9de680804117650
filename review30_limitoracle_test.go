package mcpguard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview30SpendDefaultPricedElsewhere: a Tools Cost function prices
// the calls by its own name only, and New took one for any name the
// default rule governs as pricing every call charged under it. A spend
// limit below the default rule's Cost was accepted while every call by
// another name it governs was refused for ever: with a read default rule
// and a limit for every tool, any tool without a rule or a Cost function;
// with a write default rule, the allowlisted "Other", whose Cost function
// was given to "other", a name off the allowlist, never admitted, so that
// no call of the tool ran at all. One for the allowlisted name itself
// prices its calls.
func TestReview30SpendDefaultPricedElsewhere(t *testing.T) {
	price := func(map[string]any) (float64, error) { return 1, nil }
	read := r29sPolicy(t, &policy.ToolRule{Class: policy.Read, Cost: 6})
	write, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "search", Class: policy.Read, Cost: 1}},
		Default:        &policy.ToolRule{Class: policy.Write, Cost: 10},
		WriteAllowlist: []string{"Other"},
	})
	if err != nil {
		t.Fatal(err)
	}
	spend := func(tool string, max float64) limiter.Limit {
		return limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Tool: tool, Max: max, Window: time.Hour}
	}
	for _, tt := range []struct {
		name   string
		p      *policy.Policy
		limit  limiter.Limit
		priced string // the name with a Cost function
		call   string // a name every call of which is refused, "" for none
	}{
		{"read_every_tool", read, spend("", 5.5), "other", "list_files"},
		{"write_off_allowlist", write, spend("other", 5), "other", "Other"},
		{"write_every_tool_off_allowlist", write, spend("", 5), "other", "Other"},
		{"write_listed", write, spend("other", 5), "Other", ""},
		{"write_every_tool_listed", write, spend("", 5), "Other", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := r29sLimiter(t, tt.limit)
			opts := &mcpguard.Options{Limiter: l, Tools: map[string]mcpguard.ToolOptions{tt.priced: {Cost: price}}}
			_, err := mcpguard.New(tt.p, fixed(bob), opts)
			switch {
			case tt.call == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.call != "" && err == nil:
				t.Fatalf("New accepted it; calls of %q: %q", tt.call, r29sCodes(t, l, tt.p, opts, tt.call, 2))
			case err != nil && !strings.Contains(err.Error(), "default rule"):
				t.Errorf("New: %v, want it to name the default rule", err)
			}
		})
	}
}
