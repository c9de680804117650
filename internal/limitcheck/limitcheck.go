// Package limitcheck finds the limits of a limiter that cap nothing under a
// policy: shared by mcpguard.New and gateway.New, which word the refusal.
package limitcheck

import (
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// A Problem is a limit for one tool that caps nothing.
type Problem struct {
	Limit limiter.Limit
	// NoRule: no call p admits is of the tool (it has no rule and equals
	// no tool rule's name under folding). Else the limit is a spend limit
	// for a tool no call of which can cost anything.
	NoRule bool
}

// Find returns the first limit of limits for one tool that caps nothing
// under p, or nil. A limit applies to every spelling of its Tool that
// equals it under folding ([policy.NameKey]), so it caps something when its
// Tool has a rule ([policy.Policy.Resolve]: with a default rule every name
// has one) or a tool rule's name equals it so; a spend limit, when besides
// one of those rules, the rule of such a name or the default rule has a
// cost, or priced reports that a Cost function may price calls by names of
// its key. A limit for every tool (no Tool) is accepted whatever the costs:
// a configuration may cap spending before any tool costs anything.
func Find(p *policy.Policy, limits []limiter.Limit, priced func(key string) bool) *Problem {
	var rules map[string][]*policy.ToolRule // the tool rules, by the key of their name
	for _, lim := range limits {
		if lim.Tool == "" {
			continue
		}
		if rules == nil {
			rules = map[string][]*policy.ToolRule{}
			for _, n := range p.Tools() {
				r, _ := p.Resolve(n)
				k := policy.NameKey(n)
				rules[k] = append(rules[k], r)
			}
		}
		k := policy.NameKey(lim.Tool)
		own, ok := p.Resolve(lim.Tool)
		if !ok && len(rules[k]) == 0 {
			return &Problem{Limit: lim, NoRule: true}
		}
		if lim.Kind == limiter.Spend && !mayCost(p, own, rules[k]) && !priced(k) {
			return &Problem{Limit: lim}
		}
	}
	return nil
}

// mayCost reports whether own (the rule a name resolves to, or nil), one of
// rules or the default rule has a cost.
func mayCost(p *policy.Policy, own *policy.ToolRule, rules []*policy.ToolRule) bool {
	// The default rule, which any other name resolves to: a name no rule
	// of its own can take (the policy's names are tool names).
	if def, ok := p.Resolve("\x00"); ok && def.Cost > 0 {
		return true
	}
	if own != nil && own.Cost > 0 {
		return true
	}
	for _, r := range rules {
		if r.Cost > 0 {
			return true
		}
	}
	return false
}
