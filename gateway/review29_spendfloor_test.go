package gateway

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview29SpendLimitBelowFixedCost: without Options.Cost a call is
// charged its rule's Cost, and the limiter never admits a call costing
// more than a spend limit's Max, so a spend limit whose Max is below the
// Cost of a rule it caps (a tool rule's, for a limit for that tool or for
// every tool; the Default rule's, for a limit for a name without a tool
// rule or for every tool) refuses every call of that tool for ever. New
// accepted it; it now refuses it, naming the rule, its cost and the limit,
// in every scope. A Cost equal to Max (one call fits), Options.Cost, a
// Default rule above a tool rule's cost for a limit of that tool (its own
// name costs its rule's), and rate and in-flight limits are accepted.
//
// The wording is that of /tmp/briefs/out/spendfloor_gateway.patch (to
// gateway.go's checkLimitTools): until it is applied, New refuses these
// limits as costing nothing, and this test fails on the wording.
func TestReview29SpendLimitBelowFixedCost(t *testing.T) {
	pol := func(def *policy.ToolRule) *policy.Policy {
		p, err := policy.New(policy.Config{
			Tools:   []policy.ToolRule{{Name: "search", Class: policy.Read, Cost: 5}, {Name: "lookup", Class: policy.Read, Cost: 1}},
			Default: def,
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	def6 := &policy.ToolRule{Class: policy.Read, Cost: 6}
	cost := func(string, policy.Args) float64 { return 1 }
	for _, scope := range []limiter.Scope{limiter.Session, limiter.User, limiter.Global} {
		lim := func(kind limiter.Kind, tool string, max float64) *limiter.Limiter {
			l := limiter.Limit{Kind: kind, Scope: scope, Tool: tool, Max: max, Window: time.Minute}
			if kind == limiter.Concurrency {
				l.Window = 0
			}
			ll, err := limiter.New([]limiter.Limit{l}, nil)
			if err != nil {
				t.Fatal(err)
			}
			return ll
		}
		for _, tt := range []struct {
			name string
			opts *Options
			call string   // a tool every call of which would be refused
			want []string // nil for accepted
		}{
			{"tool", &Options{Policy: pol(nil), Limiter: lim(limiter.Spend, "search", 3)}, "search", []string{`tool "search" costs 5`, "Max"}},
			{"other_spelling", &Options{Policy: pol(nil), Limiter: lim(limiter.Spend, "SEARCH", 3)}, "search", []string{`tool "search" costs 5`}},
			{"every_tool", &Options{Policy: pol(nil), Limiter: lim(limiter.Spend, "", 4.5)}, "search", []string{`tool "search" costs 5`, "4.5"}},
			{"default_for_tool", &Options{Policy: pol(def6), Limiter: lim(limiter.Spend, "other", 5)}, "other", []string{"Default rule costs 6", `"other"`}},
			{"default_every_tool", &Options{Policy: pol(def6), Limiter: lim(limiter.Spend, "", 5.5)}, "other", []string{"Default rule costs 6", "5.5"}},
			{"cost_equals_max", &Options{Policy: pol(nil), Limiter: lim(limiter.Spend, "search", 5)}, "", nil},
			{"cost_function", &Options{Policy: pol(def6), Limiter: lim(limiter.Spend, "", 0.5), Cost: cost}, "", nil},
			{"default_above_own_rule", &Options{Policy: pol(def6), Limiter: lim(limiter.Spend, "LOOKUP", 3)}, "", nil},
			{"rate", &Options{Policy: pol(def6), Limiter: lim(limiter.Rate, "", 1)}, "", nil},
			{"concurrency", &Options{Policy: pol(def6), Limiter: lim(limiter.Concurrency, "search", 1)}, "", nil},
		} {
			t.Run(scope.String()+"/"+tt.name, func(t *testing.T) {
				_, err := New("http://127.0.0.1:1/mcp", DemoTokens(), tt.opts)
				switch {
				case tt.want == nil && err != nil:
					t.Fatalf("New: %v", err)
				case tt.want != nil && err == nil:
					if scope != limiter.Session {
						// The harm: no call of the tool is ever admitted.
						got := newRig(t, tt.opts).post(t, viewer, call(`1`, tt.call, ""))
						t.Logf("a call of %q: status %d %s", tt.call, got.status, got.body)
					}
					t.Fatal("New accepted a spend limit below a tool's fixed cost")
				}
				for _, w := range tt.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("New = %v, want it to say %s", err, w)
					}
				}
			})
		}
	}
	// A Cost equal to Max: the first call is admitted, the next waits.
	rg := newRig(t, &Options{Policy: pol(nil), Limiter: func() *limiter.Limiter {
		l, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Tool: "search", Max: 5, Window: time.Hour}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}()})
	if got := rg.post(t, viewer, call(`1`, "search", "")); got.status != http.StatusOK {
		t.Fatalf("a call costing the whole limit: status %d %s, want 200", got.status, got.body)
	}
	if got := rg.post(t, viewer, call(`2`, "search", "")); got.status != http.StatusTooManyRequests || !strings.Contains(got.body, "SPEND_LIMIT_EXCEEDED") {
		t.Errorf("the next one: status %d %s, want 429 SPEND_LIMIT_EXCEEDED", got.status, got.body)
	}
}
