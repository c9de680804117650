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

// oracleNames are the tool names random policies are built from: some equal
// others under folding ("ſearch" is "search" to policy.NameKey), "other"
// and "Other" never have a tool rule.
var oracleNames = []string{"refund", "Refund", "REFUND", "ping", "PING", "search", "ſearch", "other", "Other"}

// oracleRoles are the roles random rules demand; oraclePrincipal holds them
// all, so no call is refused for want of a role.
var oracleRoles = []string{"admin", "ops"}

var oraclePrincipal = &policy.Principal{Subject: "u", Roles: oracleRoles}

// spellings returns name, its upper-, lower- and title-case spellings.
func spellings(name string) []string {
	title := name
	if name != "" {
		title = strings.ToUpper(name[:1]) + strings.ToLower(name[1:])
	}
	return []string{name, strings.ToUpper(name), strings.ToLower(name), title}
}

// randomConfig returns a small random policy configuration: 2 to 4 tool
// rules, an optional default rule, a write allowlist (nothing, "*", or
// some names) and optional role rules.
func randomConfig(rng *rand.Rand) policy.Config {
	costs := []float64{0, 1, 5, 10}
	rule := func(name string) policy.ToolRule {
		r := policy.ToolRule{Name: name, Class: policy.Read, Cost: costs[rng.IntN(len(costs))]}
		if rng.IntN(2) == 0 {
			r.Class = policy.Write
		}
		if rng.IntN(4) == 0 {
			r.Roles = []string{oracleRoles[rng.IntN(len(oracleRoles))]}
		}
		return r
	}
	var cfg policy.Config
	names := slices.Clone(oracleNames[:7]) // those a tool rule may have
	rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for _, n := range names[:2+rng.IntN(3)] {
		cfg.Tools = append(cfg.Tools, rule(n))
	}
	if rng.IntN(3) != 0 {
		d := rule("")
		cfg.Default = &d
	}
	switch rng.IntN(6) {
	case 0: // no write runs
	case 1:
		cfg.WriteAllowlist = []string{"*"}
	default:
		var pool []string
		for _, n := range oracleNames {
			pool = append(pool, spellings(n)...)
		}
		for range 1 + rng.IntN(3) {
			cfg.WriteAllowlist = append(cfg.WriteAllowlist, pool[rng.IntN(len(pool))])
		}
		for _, r := range cfg.Tools { // most often with the names of writes
			if r.Class == policy.Write && rng.IntN(2) == 0 {
				cfg.WriteAllowlist = append(cfg.WriteAllowlist, r.Name)
			}
		}
		slices.Sort(cfg.WriteAllowlist)
		cfg.WriteAllowlist = slices.Compact(cfg.WriteAllowlist)
	}
	if rng.IntN(3) == 0 {
		cfg.RoleRules = append(cfg.RoleRules, policy.RoleRule{Pattern: "*", Roles: oracleRoles[:1]})
	}
	if rng.IntN(3) == 0 {
		cfg.RoleRules = append(cfg.RoleRules, policy.RoleRule{Pattern: strings.ToUpper(cfg.Tools[0].Name), Roles: oracleRoles[1:]})
	}
	return cfg
}

// randomSpendLimits returns one to three spend limits, for every tool or
// for a spelling of one of oracleNames.
func randomSpendLimits(rng *rand.Rand) []limiter.Limit {
	maxes := []float64{0.5, 1, 5, 7, 10}
	var out []limiter.Limit
	for range 1 + rng.IntN(3) {
		l := limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: maxes[rng.IntN(len(maxes))], Window: time.Minute}
		if rng.IntN(3) != 0 {
			s := spellings(oracleNames[rng.IntN(len(oracleNames))])
			l.Tool = s[rng.IntN(len(s))]
		}
		out = append(out, l)
	}
	return out
}

// A witness is a name a spend limit refuses for ever: a call by it is
// admitted by the policy and charged more than the limit's Max.
type witness struct {
	name string
	rule *policy.ToolRule // the rule Authorize charges the call under
}

// witnesses returns the candidate names that lim refuses for ever under p,
// with no Cost function (as the root charges such a call: its rule's Cost,
// see Guard.toolOptions and Guard.plan). The candidates are every rule
// name, every write allowlist entry, the limit's Tool, their spellings,
// and an unrelated name.
//
// A limit for one tool is narrowed: a call by a name that is a tool rule's
// only under folding, charged the larger of that rule's Cost and the
// default rule's, counts only when the name is on the write allowlist,
// where the configuration names it. Any other such spelling is one no one
// names in advance and no client needs: the tool's own name is admitted
// whenever the spelling is (a write's spelling runs only when the tool's
// own name is listed too), charged the tool's own Cost, which the limit is
// checked against. A limit for every tool is not narrowed: the spelling's
// cost is the tool's or the default rule's, and either is admitted then by
// its own name or by a name the default rule alone governs.
func witnesses(p *policy.Policy, lim limiter.Limit) []witness {
	cands := append(slices.Clone(p.Tools()), p.WriteAllowlist()...)
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
	var out []witness
	for _, c := range all {
		if lim.Tool != "" && policy.NameKey(c) != policy.NameKey(lim.Tool) {
			continue // the limit does not apply
		}
		d := p.Authorize(oraclePrincipal, c)
		if !d.Allowed() || d.Rule.Cost <= lim.Max {
			continue
		}
		folded := d.Rule.Name != "" && d.Rule.Name != c
		if lim.Tool != "" && folded && !slices.Contains(p.WriteAllowlist(), c) {
			continue // narrowed: see above
		}
		out = append(out, witness{c, d.Rule})
	}
	return out
}

// ruled returns whether some candidate name of the key of lim's Tool
// (see witnesses) has a rule, and whether one has a rule with a cost: a
// limit for one tool caps something only then, and a spend limit only
// with a cost (the write allowlist aside: see Find).
func ruled(p *policy.Policy, lim limiter.Limit) (some, costs bool) {
	cands := append(slices.Clone(p.Tools()), lim.Tool, "unrelated_tool")
	for _, c := range cands {
		for _, s := range spellings(c) {
			if policy.NameKey(s) != policy.NameKey(lim.Tool) {
				continue
			}
			if r, ok := p.Resolve(s); ok {
				some, costs = true, costs || r.Cost > 0
			}
		}
	}
	return some, costs
}

// TestReview29dFindOracle compares Find, with no Cost function, with an
// oracle on thousands of small random policies and spend limits: Find
// reports a spend limit's cost (a Problem with Cost > 0) exactly when some
// name the policy admits and the limit applies to is charged more than the
// limit's Max (witnesses), and the cost and rule it reports are those of
// such a name. A limit for one tool it reports as having no rule exactly
// when no name of its key has one, and as costing nothing exactly when
// none of those has a rule with a cost (ruled). With several limits, it
// reports the first one's Problem.
func TestReview29dFindOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 0xd))
	never := func(string, string) bool { return false }
	var policies, reported, fine, disagree int
	for i := range 4000 {
		cfg := randomConfig(rng)
		limits := randomSpendLimits(rng)
		p, err := policy.New(cfg)
		if err != nil {
			continue // an allowlist entry that allows nothing, a role rule for no tool
		}
		policies++
		var first *Problem
		for _, lim := range limits {
			got := Find(p, []limiter.Limit{lim}, never)
			if first == nil {
				first = got
			}
			ws := witnesses(p, lim)
			if lim.Tool != "" {
				some, costs := ruled(p, lim)
				noRule := got != nil && got.NoRule
				costless := got != nil && !got.NoRule && got.Cost == 0
				if noRule != !some || !noRule && costless != !costs {
					disagree++
					if disagree <= 10 {
						t.Errorf("case %d: Find(%v) = %+v; a rule of its key: %v, with a cost: %v\npolicy %s", i, lim, got, some, costs, fmtConfig(cfg))
					}
					continue
				}
			}
			if got != nil && got.Cost > 0 {
				reported++
			} else {
				fine++
			}
			if (got != nil && got.Cost > 0) != (len(ws) > 0) || got != nil && got.Cost > 0 && !witnessed(got, ws) {
				disagree++
				if disagree <= 10 {
					t.Errorf("case %d: Find(%v) = %+v; witnesses %s\npolicy %s", i, lim, got, fmtWitnesses(ws), fmtConfig(cfg))
				}
			}
		}
		if got := Find(p, limits, never); !cmp.Equal(first, got) {
			t.Errorf("case %d: Find(%v) = %+v, want the first limit's Problem %+v\npolicy %s", i, limits, got, first, fmtConfig(cfg))
		}
	}
	if disagree > 0 {
		t.Errorf("%d disagreements in all", disagree)
	}
	t.Logf("%d valid policies; %d limits reported, %d not", policies, reported, fine)
	if policies < 1000 || reported < 200 || fine < 200 {
		t.Errorf("too few cases: %d valid policies; %d limits reported, %d not", policies, reported, fine)
	}
}

// witnessed reports whether one of ws is the call pr names: of pr.Rule
// (a tool rule's name, or an allowlist entry charged under a folded rule),
// or, with pr.Rule "", a name the default rule governs; costing pr.Cost.
func witnessed(pr *Problem, ws []witness) bool {
	for _, w := range ws {
		if w.rule.Cost == pr.Cost && (pr.Rule == "" && w.rule.Name == "" || pr.Rule != "" && pr.Rule == w.name) {
			return true
		}
	}
	return false
}

func fmtWitnesses(ws []witness) string {
	var b strings.Builder
	for _, w := range ws {
		fmt.Fprintf(&b, "[%q rule %q %v cost %v] ", w.name, w.rule.Name, w.rule.Class, w.rule.Cost)
	}
	return b.String()
}

func fmtConfig(cfg policy.Config) string {
	var b strings.Builder
	for _, r := range cfg.Tools {
		fmt.Fprintf(&b, "{%q %v cost %v} ", r.Name, r.Class, r.Cost)
	}
	if cfg.Default != nil {
		fmt.Fprintf(&b, "default {%v cost %v} ", cfg.Default.Class, cfg.Default.Cost)
	}
	fmt.Fprintf(&b, "allow %q", cfg.WriteAllowlist)
	return b.String()
}

// TestReview29dFoldAlikeCostless: when the names of two tool rules fold
// alike, a name of their key that is neither has no rule (policy.Resolve),
// so no call of the key is charged under the default rule. A spend limit
// for the key, both rules free, caps nothing whatever the default rule
// costs, and Find passed it, counting the default rule's Cost.
func TestReview29dFoldAlikeCostless(t *testing.T) {
	p, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "refund", Class: policy.Read},
			{Name: "Refund", Class: policy.Read},
		},
		Default: &policy.ToolRule{Class: policy.Read, Cost: 5},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Resolve("REFUND"); ok {
		t.Fatal(`"REFUND" has a rule`)
	}
	lim := limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Tool: "REFUND", Max: 10, Window: time.Minute}
	got := Find(p, []limiter.Limit{lim}, func(string, string) bool { return false })
	if diff := cmp.Diff(&Problem{Limit: lim}, got); diff != "" {
		t.Errorf("Find(%v) (-want +got):\n%s", lim, diff)
	}
	// A Cost function for a name of the key may still price its calls.
	if got := Find(p, []limiter.Limit{lim}, func(k, _ string) bool { return k == policy.NameKey("refund") }); got != nil {
		t.Errorf("Find(%v) with a Cost function = %+v, want nil", lim, got)
	}
}
