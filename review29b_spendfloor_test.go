package mcpguard_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview29bCostFunctionOnOtherSpelling: a Cost function in
// Options.Tools for another spelling of a tool's name ("SEARCH" for
// "search") prices only the calls by that spelling, and those cost the
// larger of it and the tool's rule's Cost (Options.Tools): no call of the
// tool costs less than its rule's Cost. New took the function for one
// that may price the tool's calls, and accepted a spend limit whose Max
// is below that Cost, for the tool or for every tool, which refuses every
// call of the tool, by either spelling, for ever. It now refuses it,
// naming the tool and its cost. A Cost function for the tool's own name,
// and one for another spelling when the rules cost nothing (a spend limit
// that then caps what that spelling's calls cost), are still accepted.
func TestReview29bCostFunctionOnOtherSpelling(t *testing.T) {
	def := &policy.ToolRule{Class: policy.Read} // so that "SEARCH" has a rule
	p := r29sPolicy(t, def)
	price := func(map[string]any) (float64, error) { return 1, nil }
	other := map[string]mcpguard.ToolOptions{"SEARCH": {Cost: price}}
	for _, scope := range r29sScopes {
		spend := func(tool string, max float64) limiter.Limit {
			return limiter.Limit{Kind: limiter.Spend, Scope: scope, Tool: tool, Max: max, Window: time.Hour}
		}
		for _, tt := range []struct {
			name  string
			limit limiter.Limit
		}{
			{"tool", spend("search", 3)},
			{"other_spelling", spend("SEARCH", 3)},
			{"every_tool", spend("", 3)},
		} {
			t.Run(scope.String()+"/"+tt.name, func(t *testing.T) {
				l := r29sLimiter(t, tt.limit)
				opts := &mcpguard.Options{Limiter: l, Tools: other}
				_, err := mcpguard.New(p, fixed(bob), opts)
				if err == nil {
					if scope != limiter.Session {
						// The harm: no call of the tool, by either spelling, is ever admitted.
						t.Logf("calls of %q: %q", "search", r29sCodes(t, l, p, opts, "search", 2))
						t.Logf("calls of %q: %q", "SEARCH", r29sCodes(t, l, p, opts, "SEARCH", 2))
					}
					t.Fatal("New accepted a spend limit below the cost of every call of a tool")
				}
				for _, w := range []string{`"search"`, "costs 5", "3"} {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("New: %v, want it to say %s", err, w)
					}
				}
			})
		}
		t.Run(scope.String()+"/accepted", func(t *testing.T) {
			for _, tt := range []struct {
				name  string
				p     *policy.Policy
				limit limiter.Limit
				tools map[string]mcpguard.ToolOptions
			}{
				{"own_name", p, spend("SEARCH", 3), map[string]mcpguard.ToolOptions{"search": {Cost: price}}},
				{"own_name_every_tool", p, spend("", 3), map[string]mcpguard.ToolOptions{"search": {Cost: price}}},
				// ping's rule costs nothing: a call by "PING" costs what
				// its function says, which the limit caps.
				{"costless_rule", p, spend("ping", 3), map[string]mcpguard.ToolOptions{"PING": {Cost: price}}},
			} {
				l := r29sLimiter(t, tt.limit)
				if _, err := mcpguard.New(tt.p, fixed(bob), &mcpguard.Options{Limiter: l, Tools: tt.tools}); err != nil {
					t.Errorf("%s: New: %v", tt.name, err)
				}
			}
		})
	}
}

// TestReview29bFloorAgreesWithLimiter: New refuses a spend limit below a
// rule's Cost exactly when the limiter would never admit a call of that
// cost, to the last bit of a float64: a Cost of 0.1+0.2
// (0.30000000000000004) against a Max of 0.3 is never admitted and is
// refused; a Cost of 0.3 against a Max of 0.1+0.2, and a Cost equal to
// Max, are admitted once and accepted.
func TestReview29bFloorAgreesWithLimiter(t *testing.T) {
	_, store := dsRedis(t)
	for i, tt := range []struct{ cost, max float64 }{
		{0.1 + 0.2, 0.3},
		{0.3, 0.1 + 0.2},
		{0.3, 0.3},
		{5, math.Nextafter(5, 0)},
		{math.Nextafter(5, 0), 5},
	} {
		p, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "search", Class: policy.Read, Cost: tt.cost}}})
		if err != nil {
			t.Fatal(err)
		}
		lim := limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Tool: "search", Max: tt.max, Window: time.Hour}
		_, err = mcpguard.New(p, fixed(bob), &mcpguard.Options{Limiter: r29sLimiter(t, lim)})
		for _, st := range []limiter.Store{nil, store} {
			l, lerr := limiter.New([]limiter.Limit{lim}, &limiter.Options{Store: st})
			if lerr != nil {
				t.Fatal(lerr)
			}
			// A user of its own for each case: a limit's state is kept
			// whatever its Max.
			d := l.AllowAt(context.Background(), time.Now(), limiter.Request{Session: "s", User: fmt.Sprint("u", i), Tool: "search", Calls: 1, Cost: tt.cost})
			if d.Err != nil {
				t.Fatal(d.Err)
			}
			if refused := err != nil; refused == d.Allowed {
				t.Errorf("cost %v, Max %v, store %T: New refused %v (%v), but the limiter's first call allowed %v", tt.cost, tt.max, st, refused, err, d.Allowed)
			}
		}
	}
}
