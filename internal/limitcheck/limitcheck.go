// Package limitcheck finds the limits of a limiter that cannot do what
// they were meant to under a policy: shared by mcpguard.New and
// gateway.New, which word the refusal.
package limitcheck

import (
	"slices"

	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// A Problem is a limit that caps nothing, or a spend limit that refuses
// every call of a tool for ever.
type Problem struct {
	Limit limiter.Limit
	// NoRule: no call p admits is of the limit's tool (it has no rule and
	// equals no tool rule's name under folding).
	NoRule bool
	// Cost, when positive, is the fixed cost of every call of a tool the
	// spend limit caps, more than the limit's Max: the limiter never
	// admits a call of more than Max units ([limiter.Limit]), so no call
	// of that tool is ever admitted. Rule is the name of the tool rule
	// whose Cost it is, "" for the default rule's, or a write allowlist
	// entry that is a tool rule's name only under folding, whose calls are
	// charged the larger of that rule's Cost and the default rule's.
	Cost float64
	Rule string
	// Else (neither NoRule nor a Cost) the limit is a spend limit for a
	// tool no call of which can cost anything.
}

// Find returns the first limit of limits that cannot do what it was meant
// to under p, or nil. A limit for one tool applies to every spelling of
// its Tool that equals it under folding ([policy.NameKey]), so it caps
// something when its Tool has a rule ([policy.Policy.Resolve]: with a
// default rule every name has one) or a tool rule's name equals it so; a
// spend limit for one tool, when besides one of those rules, the rule of
// such a name or the default rule has a cost (the default rule's counts
// unless the names of two tool rules equal it so: no other name of its
// key has a rule then), or priced(k, "") reports that a Cost function may
// price calls by names of its key k. A limit for every tool (no Tool) caps
// something whatever the costs: a configuration may cap spending before
// any tool costs anything.
//
// A spend limit whose Max is below the Cost of a rule it applies to refuses
// every call charged under that rule for ever, unless a Cost function may
// price such calls below it: a tool rule's, for a limit for every tool or
// for the rule's key (a call by another spelling of the rule's name costs
// at least as much), unless priced(k, name) reports, for the rule's key k
// and name, that a Cost function may price a call charged under it below
// its Cost; the default rule's, for a limit for every tool or for a key k
// no tool rule's name has: when it admits any name (a read's, or a write's
// when the write allowlist is a lone "*"), unless priced(k, "") reports
// that a Cost function may price calls by names of k (with k "", for a
// limit for every tool: by every name without a tool rule, as one for some
// names prices no call by another lower); else (a write's) for the entries
// of the write allowlist without a rule of their own (of key k, for a limit
// for one tool), which it governs, unless priced(key, w) reports, for each
// such entry w and its key, that a Cost function may price calls by w below
// its Cost (one for a name off the allowlist prices no call admitted). Find
// reports it, unless the rule is a write's that is never admitted: a tool
// rule whose name is not on the write allowlist, or the default rule when
// the allowlist is not a lone "*" and has no such entry. It reports as well
// a write allowlist entry w (of key k, for a limit for one tool) that is a
// tool rule's name only under folding, whose calls are charged under the
// rule of such names (the larger of the tool's Cost and the default
// rule's), when that costs more than Max, unless priced(k, w) reports that
// a Cost function may price them below it. A cost equal to Max is allowed:
// a full budget admits one such call. Another name that is a tool rule's
// only under folding, off the write allowlist, is not checked: a call by it
// may cost more (the larger of the rule's Cost and the default rule's), but
// the tool is admitted whenever it is, by its own name, at its own cost.
// Nor, for a limit for one tool, is a name of its key that the default rule
// governs, off the allowlist, when priced(k, "") reports a Cost function
// for another: the tool is admitted by that one. A limit for one tool is
// checked alike whichever spelling of it its Tool is, as the limiter
// applies it to every spelling. [Priced] makes priced from the names with a
// Cost function.
func Find(p *policy.Policy, limits []limiter.Limit, priced func(key, rule string) bool) *Problem {
	var (
		names []string                      // the tool rules' names, sorted
		rules map[string][]*policy.ToolRule // the tool rules, by the key of their name
	)
	// The default rule, which any other name resolves to: a name no rule
	// of its own can take (the policy's names are tool names).
	def, _ := p.Resolve("\x00")
	for _, lim := range limits {
		if lim.Tool == "" && lim.Kind != limiter.Spend {
			continue
		}
		if rules == nil {
			names = p.Tools()
			rules = map[string][]*policy.ToolRule{}
			for _, n := range names {
				r, _ := p.Resolve(n)
				k := policy.NameKey(n)
				rules[k] = append(rules[k], r)
			}
		}
		if lim.Tool == "" {
			for _, n := range names {
				r, _ := p.Resolve(n)
				if pr := over(lim, r, ruleCalled(p, r), policy.NameKey(n), priced); pr != nil {
					return pr
				}
			}
			if pr := overDefault(p, lim, def, "", true, priced); pr != nil {
				return pr
			}
			if pr := foldedEntries(p, lim, "", true, priced); pr != nil {
				return pr
			}
			continue
		}
		k := policy.NameKey(lim.Tool)
		own, ok := p.Resolve(lim.Tool)
		if !ok && len(rules[k]) == 0 {
			return &Problem{Limit: lim, NoRule: true}
		}
		if lim.Kind != limiter.Spend {
			continue
		}
		if !mayCost(def, own, rules[k]) && !priced(k, "") {
			return &Problem{Limit: lim}
		}
		if len(rules[k]) == 0 { // every name of the key has the default rule
			if pr := overDefault(p, lim, def, k, false, priced); pr != nil {
				return pr
			}
		}
		for _, r := range rules[k] {
			if pr := over(lim, r, ruleCalled(p, r), k, priced); pr != nil {
				return pr
			}
		}
		if pr := foldedEntries(p, lim, k, false, priced); pr != nil {
			return pr
		}
	}
	return nil
}

// foldedEntries returns the Problem of spend limit lim for an entry w of
// p's write allowlist, of key k (any key, with every), that is a tool
// rule's name only under folding: a call by w is charged under the rule of
// such names, which costs the larger of the tool's Cost and the default
// rule's, and is admitted when the tool's own name is on the allowlist too
// or its rule is a read's ([policy.Policy.Authorize]). It is a Problem
// when that costs more than lim.Max and priced(k, w) does not report that a
// Cost function may price calls by w below it; else nil.
func foldedEntries(p *policy.Policy, lim limiter.Limit, k string, every bool, priced func(string, string) bool) *Problem {
	for _, w := range p.WriteAllowlist() {
		r, ok := p.Resolve(w)
		if !ok || r.Name == "" || r.Name == w || !every && policy.NameKey(w) != k {
			continue // no rule, the default rule, its own, or another key
		}
		if own, _ := p.Resolve(r.Name); own.Class == policy.Write && !p.WriteAllowed(r.Name) {
			continue // never admitted
		}
		if r.Cost > lim.Max && !priced(policy.NameKey(w), w) {
			return &Problem{Limit: lim, Cost: r.Cost, Rule: w}
		}
	}
	return nil
}

// over returns the Problem of spend limit lim when the rule r (nil for
// none) costs more than lim.Max, priced(k, r.Name) does not report that a
// Cost function may price calls by names of key k charged under it below
// that, and called: some call under r may be admitted (a write's, off the
// write allowlist, is never called, whatever it costs); else nil.
func over(lim limiter.Limit, r *policy.ToolRule, called bool, k string, priced func(string, string) bool) *Problem {
	if r == nil || !called || r.Cost <= lim.Max || priced(k, r.Name) {
		return nil
	}
	return &Problem{Limit: lim, Cost: r.Cost, Rule: r.Name}
}

// ruleCalled reports whether p may admit a call under r, a tool rule: a
// read's, or a write's whose name is on the write allowlist (a call by
// another spelling needs the rule's own name there too).
func ruleCalled(p *policy.Policy, r *policy.ToolRule) bool {
	return r.Class != policy.Write || p.WriteAllowed(r.Name)
}

// overDefault returns the Problem of spend limit lim for def, p's default
// rule (nil for none), for the calls by names of key k (by any name, with
// every) that it alone governs, when def costs more than lim.Max: such a
// call costs def's Cost unless its name has a Cost function. When def
// admits names no configuration lists (a read's, or a write's when the
// write allowlist is a lone "*"), it is a Problem unless priced(k, "")
// reports that a Cost function may price calls by names of k (with every,
// k is "": by every name without a tool rule, as a Cost function for some
// names prices no call by another lower); else only the entries of the
// write allowlist (of key k, unless every) that def governs are admitted,
// and it is a Problem unless priced(key, w) reports, for each such entry w
// and its key, that a Cost function may price calls by w below it (one for
// a name off the allowlist prices no admitted call). Else nil.
func overDefault(p *policy.Policy, lim limiter.Limit, def *policy.ToolRule, k string, every bool, priced func(string, string) bool) *Problem {
	if def == nil || def.Cost <= lim.Max {
		return nil
	}
	pr := &Problem{Limit: lim, Cost: def.Cost}
	allow := p.WriteAllowlist()
	if def.Class != policy.Write || slices.Equal(allow, []string{"*"}) {
		if priced(k, "") {
			return nil
		}
		return pr
	}
	for _, w := range allow {
		if r, _ := p.Resolve(w); r == def && (every || policy.NameKey(w) == k) && !priced(policy.NameKey(w), w) {
			return pr
		}
	}
	return nil
}

// mayCost reports whether own (the rule a name resolves to, or nil), one of
// rules (the tool rules of its key) or the default rule def (nil without
// one) has a cost. Def's counts only with fewer than two rules: the names
// of the key then have def, or the rule of a name that equals a tool
// rule's only under folding, which costs at least def's Cost; with two, a
// name of the key that is neither has no rule ([policy.Policy.Resolve]),
// and no call of the key is charged under def.
func mayCost(def, own *policy.ToolRule, rules []*policy.ToolRule) bool {
	if def != nil && def.Cost > 0 && len(rules) < 2 {
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

// Priced returns the priced function of [Find] for a configuration whose
// Cost functions are those of the names in named (mcpguard's
// Options.Tools): for a name, whether it has one (a call by another
// spelling of a tool rule's name costs at least what one by the rule's own
// name does); for a key k and no name, whether a name of k has one; for
// the key "" and no name (every name without a tool rule), false: the
// names are finitely many.
func Priced(named []string) func(key, rule string) bool {
	return func(k, rule string) bool {
		if rule != "" {
			return slices.Contains(named, rule)
		}
		return k != "" && slices.ContainsFunc(named, func(n string) bool { return policy.NameKey(n) == k })
	}
}
