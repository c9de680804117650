package mcpguard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// r29sPolicy has a tool that costs 5 a call, one that costs 1, one free,
// and def as its default rule.
func r29sPolicy(t *testing.T, def *policy.ToolRule, more ...policy.ToolRule) *policy.Policy {
	t.Helper()
	p, err := policy.New(policy.Config{
		Tools: append([]policy.ToolRule{
			{Name: "search", Class: policy.Read, Cost: 5},
			{Name: "lookup", Class: policy.Read, Cost: 1},
			{Name: "ping", Class: policy.Read},
		}, more...),
		Default: def,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func r29sLimiter(t *testing.T, limits ...limiter.Limit) *limiter.Limiter {
	t.Helper()
	l, err := limiter.New(limits, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// r29sCodes calls tool n times through a Limit step of l under p and returns
// the codes ("" for a call that ran).
func r29sCodes(t *testing.T, l *limiter.Limiter, p *policy.Policy, opts *mcpguard.Options, tool string, n int) []string {
	t.Helper()
	lm, err := mcpguard.Limit(l, p, opts)
	if err != nil {
		t.Fatalf("Limit: %v", err)
	}
	var s stub
	h := mcpguard.Authenticate(fixed(bob))(lm(s.handle))
	var codes []string
	for range n {
		codes = append(codes, codeOfCall(t, h, req(tool, `{}`)))
	}
	return codes
}

var r29sScopes = []limiter.Scope{limiter.Session, limiter.User, limiter.Global}

// TestReview29SpendLimitBelowFixedCost: a spend limit whose Max is below
// the fixed cost of a tool it caps (its rule's Cost, or the default rule's
// for a name without a rule of its own, and no Cost function) refuses
// every call of that tool for ever: the limiter never admits a call
// costing more than the whole budget. New accepted it; it now refuses it,
// naming the tool, its cost and the limit, in every scope, as do the
// stand-alone Limit and Confirm steps.
func TestReview29SpendLimitBelowFixedCost(t *testing.T) {
	def := &policy.ToolRule{Class: policy.Read, Cost: 5}
	def6 := &policy.ToolRule{Class: policy.Read, Cost: 6} // above every tool rule's
	folded := []policy.ToolRule{{Name: "Fetch", Class: policy.Read, Cost: 1}, {Name: "fetch", Class: policy.Read, Cost: 5}}
	for _, scope := range r29sScopes {
		spend := func(tool string, max float64) limiter.Limit {
			return limiter.Limit{Kind: limiter.Spend, Scope: scope, Tool: tool, Max: max, Window: time.Hour}
		}
		for _, tt := range []struct {
			name   string
			p      *policy.Policy
			limits []limiter.Limit
			call   string // a name every call of which is refused
			want   []string
		}{
			{"tool", r29sPolicy(t, nil), []limiter.Limit{spend("search", 3)}, "search", []string{`"search"`, "5", "3"}},
			{"other_spelling", r29sPolicy(t, nil), []limiter.Limit{spend("SEARCH", 3)}, "search", []string{`"search"`, "5"}},
			{"every_tool", r29sPolicy(t, nil), []limiter.Limit{spend("", 3)}, "search", []string{`"search"`, "5"}},
			{"default_for_tool", r29sPolicy(t, def), []limiter.Limit{spend("other", 3)}, "other", []string{"default rule", `"other"`, "5"}},
			{"default_every_tool", r29sPolicy(t, def6), []limiter.Limit{spend("", 5.5)}, "other", []string{"default rule", "6", "5.5"}},
			{"rules_equal_under_folding", r29sPolicy(t, nil, folded...), []limiter.Limit{spend("Fetch", 3)}, "fetch", []string{`"fetch"`, "5"}},
			{"second_limit", r29sPolicy(t, nil), []limiter.Limit{spend("lookup", 100), spend("", 1000), spend("search", 4.999)}, "search", []string{`"search"`, "4.999"}},
		} {
			t.Run(scope.String()+"/"+tt.name, func(t *testing.T) {
				l := r29sLimiter(t, tt.limits...)
				_, err := mcpguard.New(tt.p, fixed(bob), &mcpguard.Options{Limiter: l})
				if err == nil {
					if scope != limiter.Session {
						// The harm: no call of the tool is ever admitted.
						t.Logf("calls of %q: %q", tt.call, r29sCodes(t, l, tt.p, nil, tt.call, 2))
					}
					t.Fatal("New accepted a spend limit below a tool's fixed cost")
				}
				for _, w := range tt.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("New: %v, want it to say %s", err, w)
					}
				}
				if _, err := mcpguard.Limit(l, tt.p, nil); err == nil {
					t.Error("Limit accepted it")
				}
				if _, err := mcpguard.Confirm(r29Signer(t), tt.p, &mcpguard.Options{Limiter: l}); err == nil {
					t.Error("Confirm accepted it")
				}
			})
		}
	}
}

// TestReview29SpendLimitAtOrAboveCost: what New keeps accepting. A cost
// equal to Max admits one call (a full bucket holds it); a Cost function
// may price calls below Max; rate and in-flight limits count calls, not
// cost; a folded spelling of a tool costs the larger of its rule's and the
// default's, but the tool's own name costs its rule's, which fits.
func TestReview29SpendLimitAtOrAboveCost(t *testing.T) {
	def := &policy.ToolRule{Class: policy.Read, Cost: 5}
	price := func(map[string]any) (float64, error) { return 1, nil }
	for _, scope := range r29sScopes {
		lim := func(kind limiter.Kind, tool string, max float64) limiter.Limit {
			l := limiter.Limit{Kind: kind, Scope: scope, Tool: tool, Max: max, Window: time.Hour}
			if kind == limiter.Concurrency {
				l.Window = 0
			}
			return l
		}
		for _, tt := range []struct {
			name   string
			p      *policy.Policy
			limits []limiter.Limit
			tools  map[string]mcpguard.ToolOptions
		}{
			{"cost_equals_max", r29sPolicy(t, nil), []limiter.Limit{lim(limiter.Spend, "search", 5)}, nil},
			{"every_tool_equals_max", r29sPolicy(t, def), []limiter.Limit{lim(limiter.Spend, "", 5)}, nil},
			{"cost_function", r29sPolicy(t, nil), []limiter.Limit{lim(limiter.Spend, "search", 3)}, map[string]mcpguard.ToolOptions{"search": {Cost: price}}},
			{"cost_function_every_tool", r29sPolicy(t, nil), []limiter.Limit{lim(limiter.Spend, "", 3)}, map[string]mcpguard.ToolOptions{"search": {Cost: price}}},
			{"cost_function_default", r29sPolicy(t, def), []limiter.Limit{lim(limiter.Spend, "other", 3)}, map[string]mcpguard.ToolOptions{"other": {Cost: price}}},
			{"default_above_own_rule", r29sPolicy(t, def), []limiter.Limit{lim(limiter.Spend, "LOOKUP", 3)}, nil},
			{"rate", r29sPolicy(t, def), []limiter.Limit{lim(limiter.Rate, "search", 1), lim(limiter.Rate, "", 1)}, nil},
			{"concurrency", r29sPolicy(t, def), []limiter.Limit{lim(limiter.Concurrency, "search", 1), lim(limiter.Concurrency, "", 1)}, nil},
		} {
			t.Run(scope.String()+"/"+tt.name, func(t *testing.T) {
				l := r29sLimiter(t, tt.limits...)
				if _, err := mcpguard.New(tt.p, fixed(bob), &mcpguard.Options{Limiter: l, Tools: tt.tools}); err != nil {
					t.Fatalf("New: %v", err)
				}
			})
		}
	}
	// A cost equal to Max: the first call is admitted, the next waits.
	l := r29sLimiter(t, limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Tool: "search", Max: 5, Window: time.Hour})
	got := r29sCodes(t, l, r29sPolicy(t, nil), nil, "search", 2)
	if got[0] != "" || got[1] != "SPEND_LIMIT_EXCEEDED" {
		t.Errorf("two calls costing the whole limit: %q, want the first admitted, the second SPEND_LIMIT_EXCEEDED", got)
	}
}

func r29Signer(t *testing.T) *confirm.Signer {
	t.Helper()
	s, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
