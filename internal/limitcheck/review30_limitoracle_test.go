package limitcheck

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// randomPricedNames returns up to three names with a Cost function (as
// mcpguard's Options.Tools may give them): spellings of oracleNames that
// have a rule under p (mcpguard.New refuses options for a name without
// one), never "unrelated_tool".
func randomPricedNames(rng *rand.Rand, p *policy.Policy) []string {
	var pool []string
	for _, n := range oracleNames {
		for _, s := range spellings(n) {
			if _, ok := p.Resolve(s); ok {
				pool = append(pool, s)
			}
		}
	}
	slices.Sort(pool)
	pool = slices.Compact(pool)
	var out []string
	for range rng.IntN(4) {
		if len(pool) > 0 {
			out = append(out, pool[rng.IntN(len(pool))])
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// leastCost returns the least a call by name, charged under r (the rule
// Authorize gives it), may cost when the names of named have a Cost
// function, which may give any cost: as mcpguard charges it (see
// Guard.toolOptions and Guard.plan), its own Cost function's cost or else
// r's Cost; for a name that is a tool rule's only under folding, with a
// Cost function for either name, the larger of that and the tool's own
// (its Cost function's, or else its own rule's Cost).
func leastCost(p *policy.Policy, named []string, name string, r *policy.ToolRule) float64 {
	fn := func(n string) bool { return slices.Contains(named, n) }
	if r.Name == "" || r.Name == name || !fn(name) && !fn(r.Name) {
		if fn(name) {
			return 0
		}
		return r.Cost
	}
	own := r.Cost
	if fn(name) {
		own = 0
	}
	var theirs float64
	if t, ok := p.Resolve(r.Name); ok && !fn(r.Name) {
		theirs = t.Cost
	}
	return max(own, theirs)
}

// A pricedWitness is a name a spend limit refuses for ever: a call by it is
// admitted by the policy and charged more than the limit's Max whatever
// the Cost functions give.
type pricedWitness struct {
	name string
	rule *policy.ToolRule // the rule Authorize charges the call under
	cost float64          // the least it may be charged
}

// pricedWitnesses returns the candidate names that lim refuses for ever
// under p when the names of named have a Cost function: the candidates of
// witnesses, and the spellings of named.
//
// It is narrowed as witnesses is, for a limit for every tool too: a name
// that is a tool rule's only under folding and is not on the write
// allowlist is one no one names in advance and no client needs, as the
// tool's own name is admitted whenever it is (with a Cost function for
// the tool's own name only, such a spelling still costs at least the
// combined rule's Cost; the tool is callable by its own name). For a limit
// for one tool, a name of its key governed by the default rule alone and
// not on the write allowlist is narrowed the same way when a name of the
// key with a Cost function is admitted: the tool is callable by that name.
// A name on the write allowlist is one the configuration names, and counts
// whatever other names do; with a limit for every tool, a name the default
// rule governs is a tool of its own, and a Cost function for another makes
// it no cheaper.
func pricedWitnesses(p *policy.Policy, named []string, lim limiter.Limit) []pricedWitness {
	cands := append(slices.Clone(p.Tools()), p.WriteAllowlist()...)
	cands = append(cands, named...)
	cands = append(cands, "unrelated_tool")
	if lim.Tool != "" {
		cands = append(cands, lim.Tool)
	}
	var all []string
	for _, c := range cands {
		if c != "*" {
			all = append(all, spellings(c)...)
		}
	}
	slices.Sort(all)
	all = slices.Compact(all)
	listed := func(n string) bool { return slices.Contains(p.WriteAllowlist(), n) }
	// keyPriced: a name of lim's key the default rule alone governs, with
	// a Cost function, is admitted.
	keyPriced := false
	for _, n := range named {
		if lim.Tool != "" && policy.NameKey(n) == policy.NameKey(lim.Tool) {
			if d := p.Authorize(oraclePrincipal, n); d.Allowed() && d.Rule.Name == "" {
				keyPriced = true
			}
		}
	}
	var out []pricedWitness
	for _, c := range all {
		if lim.Tool != "" && policy.NameKey(c) != policy.NameKey(lim.Tool) {
			continue // the limit does not apply
		}
		d := p.Authorize(oraclePrincipal, c)
		if !d.Allowed() {
			continue
		}
		cost := leastCost(p, named, c, d.Rule)
		if cost <= lim.Max {
			continue
		}
		folded := d.Rule.Name != "" && d.Rule.Name != c
		if folded && !listed(c) || d.Rule.Name == "" && keyPriced && !listed(c) {
			continue // narrowed: see above
		}
		out = append(out, pricedWitness{c, d.Rule, cost})
	}
	return out
}

// pricedRuled is ruled with Cost functions: whether a candidate name of
// the key of lim's Tool has a rule, and whether one has a rule with a cost
// or a name of the key has a Cost function (see Find).
func pricedRuled(p *policy.Policy, named []string, lim limiter.Limit) (some, costs bool) {
	some, costs = ruled(p, lim)
	for _, n := range named {
		if policy.NameKey(n) == policy.NameKey(lim.Tool) {
			costs = true
		}
	}
	return some, costs
}

// TestReview30FindPricedOracle is TestReview29dFindOracle with Cost
// functions: random names (with a rule) have one, whose cost may be
// anything, and Find is given Priced of them, as mcpguard gives it its
// Options.Tools. Find reports a spend limit's cost exactly when some name
// the policy admits and the limit applies to costs more than Max whatever
// the Cost functions give (pricedWitnesses), with the cost and rule of
// such a name; it reports a limit for one tool as having no rule, or as
// costing nothing, as the oracle of TestReview29dFindOracle says, a Cost
// function for a name of its key counting as a cost. A limit for one tool
// has the same Problem whichever spelling of the tool it names: the
// limiter applies it to every spelling alike. With a Cost function for
// every name (the gateway's Options.Cost), Find reports no cost.
func TestReview30FindPricedOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 0x0c))
	always := func(string, string) bool { return true }
	never := func(string, string) bool { return false }
	var policies, reported, fine, changed, disagree int
	fail := func(format string, args ...any) {
		disagree++
		if disagree <= 10 {
			t.Errorf(format, args...)
		}
	}
	for i := range 4000 {
		cfg := randomConfig(rng)
		limits := randomSpendLimits(rng)
		p, err := policy.New(cfg)
		if err != nil {
			continue
		}
		policies++
		named := randomPricedNames(rng, p)
		priced := Priced(named)
		for _, lim := range limits {
			got := Find(p, []limiter.Limit{lim}, priced)
			if !cmp.Equal(got, Find(p, []limiter.Limit{lim}, never)) {
				changed++ // a Cost function decided it
			}
			ws := pricedWitnesses(p, named, lim)
			if lim.Tool != "" {
				some, costs := pricedRuled(p, named, lim)
				noRule := got != nil && got.NoRule
				costless := got != nil && !got.NoRule && got.Cost == 0
				if noRule != !some || !noRule && costless != !costs {
					fail("case %d: Find(%v) = %+v; a rule of its key: %v, with a cost: %v\npolicy %s\npriced %q", i, lim, got, some, costs, fmtConfig(cfg), named)
					continue
				}
				for _, s := range spellings(lim.Tool) {
					other := lim
					other.Tool = s
					if policy.NameKey(s) != policy.NameKey(lim.Tool) {
						continue
					}
					want := got
					if got != nil {
						w := *got
						w.Limit = other
						want = &w
					}
					if alt := Find(p, []limiter.Limit{other}, priced); !cmp.Equal(want, alt) {
						fail("case %d: Find(%v) = %+v, but Find(%v) = %+v\npolicy %s\npriced %q", i, other, alt, lim, got, fmtConfig(cfg), named)
					}
				}
			}
			if got != nil && got.Cost > 0 {
				reported++
			} else {
				fine++
			}
			if (got != nil && got.Cost > 0) != (len(ws) > 0) || got != nil && got.Cost > 0 && !pricedWitnessed(got, ws) {
				fail("case %d: Find(%v) = %+v; witnesses %s\npolicy %s\npriced %q", i, lim, got, fmtPricedWitnesses(ws), fmtConfig(cfg), named)
			}
			if got := Find(p, []limiter.Limit{lim}, always); got != nil && got.Cost > 0 {
				fail("case %d: Find(%v) with every name priced = %+v, want no cost\npolicy %s", i, lim, got, fmtConfig(cfg))
			}
		}
	}
	if disagree > 0 {
		t.Errorf("%d disagreements in all", disagree)
	}
	t.Logf("%d valid policies; %d limits reported, %d not; %d decided by a Cost function", policies, reported, fine, changed)
	if policies < 1000 || reported < 200 || fine < 200 || changed < 200 {
		t.Errorf("too few cases: %d valid policies; %d limits reported, %d not; %d decided by a Cost function", policies, reported, fine, changed)
	}
}

// pricedWitnessed reports whether one of ws is the call pr names: of
// pr.Rule (a tool rule's name, or an allowlist entry charged under a
// folded rule), or, with pr.Rule "", a name the default rule governs;
// costing pr.Cost.
func pricedWitnessed(pr *Problem, ws []pricedWitness) bool {
	for _, w := range ws {
		if w.cost == pr.Cost && (pr.Rule == "" && w.rule.Name == "" || pr.Rule != "" && pr.Rule == w.name) {
			return true
		}
	}
	return false
}

func fmtPricedWitnesses(ws []pricedWitness) string {
	var b strings.Builder
	for _, w := range ws {
		fmt.Fprintf(&b, "[%q rule %q %v cost %v] ", w.name, w.rule.Name, w.rule.Class, w.cost)
	}
	return b.String()
}

// TestReview30FindDefaultPricedElsewhere: a Cost function prices only the
// calls by its own name. Find took one for any name the default rule
// governs (priced(k, "")) as pricing every call charged under it: a spend
// limit below the default rule's Cost was accepted while every call by a
// name on the write allowlist that it governs (or, with a read default
// rule, by any name without a rule or a Cost function) was refused for
// ever, though the Cost function was for a name never admitted (off the
// allowlist) or for another tool altogether.
func TestReview30FindDefaultPricedElsewhere(t *testing.T) {
	write, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "refund", Class: policy.Write, Cost: 1}},
		Default:        &policy.ToolRule{Class: policy.Write, Cost: 10},
		WriteAllowlist: []string{"ping", "refund"},
	})
	if err != nil {
		t.Fatal(err)
	}
	read, err := policy.New(policy.Config{
		Tools:   []policy.ToolRule{{Name: "refund", Class: policy.Read, Cost: 1}},
		Default: &policy.ToolRule{Class: policy.Read, Cost: 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	spend := func(tool string) limiter.Limit {
		return limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Tool: tool, Max: 5, Window: time.Minute}
	}
	always := func(string, string) bool { return true }
	for _, tt := range []struct {
		name   string
		p      *policy.Policy
		limit  limiter.Limit
		priced func(string, string) bool
		want   *Problem
	}{
		// "other" is never admitted (off the allowlist); "ping" is, and
		// costs 10.
		{"write_every_tool", write, spend(""), Priced([]string{"other"}), &Problem{Limit: spend(""), Cost: 10}},
		{"write_other_spelling", write, spend("ping"), Priced([]string{"PING"}), &Problem{Limit: spend("ping"), Cost: 10}},
		{"write_listed_priced", write, spend("ping"), Priced([]string{"ping"}), nil},
		{"write_every_tool_listed_priced", write, spend(""), Priced([]string{"ping"}), nil},
		// A read default rule admits every name: any but "report" costs 10.
		{"read_every_tool", read, spend(""), Priced([]string{"report"}), &Problem{Limit: spend(""), Cost: 10}},
		// A limit for one tool: that tool is callable by "REPORT".
		{"read_tool_other_spelling", read, spend("report"), Priced([]string{"REPORT"}), nil},
		// The gateway's Options.Cost prices every call.
		{"read_every_tool_gateway", read, spend(""), always, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Find(tt.p, []limiter.Limit{tt.limit}, tt.priced)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Find(%v) (-want +got):\n%s", tt.limit, diff)
			}
		})
	}
}
