package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard/internal/foldkey"
	"github.com/mcpguard/mcpguard/internal/jsonnum"
)

// A Principal is the authenticated caller: the real user on whose behalf a
// tool runs, never a shared service account. A Principal is immutable once
// built; it is safe for concurrent use.
type Principal struct {
	// Subject identifies the caller (a user id or e-mail). Never empty for an
	// authenticated principal.
	Subject string
	// Roles are the caller's roles. Order does not matter.
	Roles []string
	// Attrs are free-form attributes (tenant, display name, ...). Nil means none.
	Attrs map[string]string
}

// HasRole reports whether p has role r. A nil p has no roles.
func (p *Principal) HasRole(r string) bool {
	if p == nil {
		return false
	}
	for _, x := range p.Roles {
		if x == r {
			return true
		}
	}
	return false
}

// hasAny reports whether p has at least one of roles. An empty roles list
// is satisfied by anyone, including a nil p.
func (p *Principal) hasAny(roles []string) bool {
	if len(roles) == 0 {
		return true
	}
	for _, r := range roles {
		if p.HasRole(r) {
			return true
		}
	}
	return false
}

// Class says whether a tool only reads or may change something.
type Class uint8

const (
	// Read tools do not change state. The zero Class is not valid in a rule:
	// every rule states its class explicitly.
	Read Class = iota + 1
	// Write tools change state; they run only when on the write allowlist.
	Write
)

// String returns "read", "write" or "unknown".
func (c Class) String() string {
	switch c {
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return "unknown"
}

// A ToolRule is the policy for one tool.
type ToolRule struct {
	// Name is the tool's name. It may not contain "*": a tool rule is
	// not a pattern (see [RoleRule] and [Config].Default). The rule also
	// applies to a name that equals Name only under case folding (see
	// [Policy.Resolve]).
	Name string
	// Class is Read or Write. Required.
	Class Class
	// Roles, if non-empty, lists roles any one of which the caller needs.
	// Role rules matching the name apply in addition. Roles are exact
	// names: none may be empty or a lone "*".
	Roles []string
	// Cost is the fixed cost of one call in spend units; 0 means free. Must be
	// finite and non-negative. A cost computed from arguments is configured
	// on the guard, not here.
	Cost float64
	// Confirm marks a dangerous tool that needs a signed human confirmation.
	Confirm bool
	// ArgLimits are argument-aware rules for this tool; all must hold.
	ArgLimits []ArgLimit
}

// A RoleRule requires roles for every tool whose name matches Pattern.
type RoleRule struct {
	// Pattern is a tool name, or a prefix followed by "*" such as
	// "admin_*". A lone "*" matches every tool. No other character is
	// pattern syntax: New refuses a prefix with "?", "[" or "{" (glob
	// syntax elsewhere, which would be matched literally). Names are matched under
	// case folding as well as exactly: "admin_*" matches
	// "ADMIN_reset_key" too (see [Policy.Resolve]). Without a default
	// rule, [New] refuses a tool name that no tool rule has (a typo would
	// protect nothing); a prefix may name tools yet to come.
	Pattern string
	// Roles lists roles any one of which the caller needs. Must be
	// non-empty; its roles are exact names, none empty or a lone "*".
	Roles []string
}

// An ArgLimit bounds a numeric top-level argument for some callers, e.g.
// "role support may not call trigger_refund with amount above 100", or
// below 0.
type ArgLimit struct {
	// Field is the top-level argument name; nested paths are not
	// supported, and New refuses one. A call where the field is missing
	// or not a number is refused when the limit applies (fail closed).
	Field string
	// Max is the largest allowed value (inclusive). A number given as
	// text (a json.Number in [MapArgs]) is compared by its exact decimal
	// value with Max as written, the shortest decimal that reads as Max
	// (99.99, not the float64's 99.98999999999999488...): 99.99 passes a
	// Max of 99.99, and a number just above Max that rounds to Max as a
	// float64 ("100.000000000000001" for 100) is refused. A Max of +Inf
	// allows every number (that a float64 holds).
	Max float64
	// Min, if non-nil, is the smallest allowed value (inclusive), compared
	// as Max is, by its shortest decimal: 0.01 passes a Min of 0.01, and a
	// number just below Min that rounds to Min as a float64
	// ("0.0099999999999999999" for 0.01) is refused. Nil means no lower
	// bound: a Max of 100 alone lets -5 through, so a refund's amount needs
	// a Min of 0 as well. For a lower bound only, set Max to math.Inf(1)
	// (as [ParseConfig] does for a limit without "max"): a zero Max is a
	// bound of 0. [New] refuses a NaN Min, a Min of +Inf, and one above
	// Max (no number would pass).
	Min *float64
	// ExemptRoles lists roles to which the limit does not apply. Empty means
	// the limit applies to everyone. Its roles are exact names, none empty
	// or a lone "*". [New] refuses a limit they exempt every caller of:
	// one with all the roles of a set each caller needs one of.
	ExemptRoles []string
}

// Config is the data a [Policy] is built from.
type Config struct {
	// Tools holds one rule per tool name.
	Tools []ToolRule
	// RoleRules add role requirements by name pattern.
	RoleRules []RoleRule
	// WriteAllowlist names the write tools that may run. Empty means no write
	// tool runs: writes are off by default. A lone "*" allows every write
	// tool; any other entry is an exact tool name. [New] refuses an entry
	// that has no rule (no tool rule of that name, and no default rule),
	// or no rule of its own while the default rule is Read, as it would
	// allow nothing; an entry naming a read tool's rule changes nothing
	// (reads need no allowlist) and is accepted. A name that equals a
	// write tool rule's name only under folding runs only when that rule's
	// name is listed too (see [Policy.Authorize]); [New] refuses such an
	// entry without it, as it would allow nothing.
	WriteAllowlist []string
	// Default, if non-nil, is the rule for tools without their own rule
	// (useful in a gateway in front of a server whose tools are not known in
	// advance). Nil means such tools are unknown. Its Name is ignored.
	Default *ToolRule
	// ShowForbidden makes tools the caller lacks the roles for visible, so
	// calling them is refused with [Forbidden]. False (the default) hides
	// them: they are [NotFound] and absent from listings, exactly like tools
	// that do not exist.
	ShowForbidden bool
}

// A Policy is a compiled, immutable [Config]. It is safe for concurrent use.
// The zero Policy has no rules: every tool is unknown to it. Its methods
// must not be called on a nil *Policy.
type Policy struct {
	tools map[string]*ToolRule
	// folded holds, by key (appendKey), the rule of a name that equals a
	// tool rule's name only under folding: that rule and the default rule
	// at once; nil when there is no default rule, or two rules fold alike.
	folded map[string]*ToolRule
	// also holds the default rule's roles that a rule of folded demands
	// besides its own Roles.
	also          map[*ToolRule][]string
	exactRoles    map[string][][]string // by key
	prefixRoles   []prefixRule
	maxKey        int // the length of the longest key of a rule's name or pattern
	writes        map[string]bool
	allWrites     bool
	def           *ToolRule
	showForbidden bool
	// byPrefix holds the roles of prefixRoles by the key of their prefix,
	// and prefixLens the lengths of those keys, ascending, without
	// repeats: rolesOK looks up the prefixes of a tool's key of those
	// lengths rather than comparing the key with every rule's (a listing
	// asks of every tool). Nil with fewPrefixes rules or fewer, which
	// rolesOK compares one by one, faster than a lookup.
	byPrefix   map[string][][]string
	prefixLens []int
}

// fewPrefixes is the most prefix rules rolesOK compares with a tool's key
// one by one.
const fewPrefixes = 8

// A prefixRule is a role rule with a pattern "prefix*".
type prefixRule struct {
	key   []byte // of the prefix
	roles []string
}

// New validates cfg and compiles it. It returns an error naming the first
// bad rule: a duplicate or empty name, a missing class, a negative or
// non-finite cost, an empty role list in a role rule, an empty role name in
// any role list, a malformed pattern (empty, or with a "*" other than a
// trailing one), an argument limit without a field, with a NaN Max, or
// with a NaN or +Inf Min or one above its Max, or an empty name in the
// write allowlist. Names that cannot be what the author
// meant are refused too, since a rule whose name matches nothing silently
// does not apply: a tool name, pattern, role, argument field or allowlist
// entry with invalid UTF-8, a control or invisible formatting character
// (but a zero-width joiner or non-joiner between two visible non-ASCII
// characters, as Persian and emoji write words), white space at an end
// (for a pattern, also just before its "*"), or nothing but
// default-ignorable characters (a variation selector, a Hangul filler),
// which no one sees and which a pattern "\u034f*" would make a lone "*";
// a "*" in a tool rule's name or in an allowlist entry other than a lone
// "*", and a role that is a lone "*" (none of them is a pattern); an
// argument field that looks like a path (with ".", "/", "[" or "]"), which
// would be read as a top-level name a caller can send itself; a role rule
// whose pattern is a name (no trailing "*") that is no tool rule's, under
// folding, when there are tool rules and no default rule (a typo: it
// protects nothing, and the tool meant runs for every role; a prefix
// pattern may be meant for tools yet to come, and is accepted); an argument
// limit that applies to no caller, as its exempt roles include all the
// roles of a set each caller of its rule needs one of (the rule's Roles, a
// matching role rule's; for the default rule, a lone "*" pattern's); and,
// unless the allowlist has a lone "*", an allowlist entry that allows
// nothing: one
// with no rule (a typo, with no default rule), one with no rule of its own
// whose rule is Read (the default rule's: a read needs no allowlist, and
// the tool its author listed as a write no rule classes so), and one that
// is a write tool rule's name only under case folding while that name is
// not listed. The slices of cfg are copied.
func New(cfg Config) (*Policy, error) {
	p := &Policy{
		tools:         make(map[string]*ToolRule, len(cfg.Tools)),
		folded:        make(map[string]*ToolRule, len(cfg.Tools)),
		exactRoles:    map[string][][]string{},
		writes:        map[string]bool{},
		showForbidden: cfg.ShowForbidden,
	}
	check := func(r ToolRule, what string) (*ToolRule, error) {
		if r.Class != Read && r.Class != Write {
			return nil, fmt.Errorf("policy: %s: class must be Read or Write", what)
		}
		if r.Cost < 0 || math.IsNaN(r.Cost) || math.IsInf(r.Cost, 0) {
			return nil, fmt.Errorf("policy: %s: cost %v must be finite and non-negative", what, r.Cost)
		}
		if err := checkRoles(r.Roles, what, "roles"); err != nil {
			return nil, err
		}
		for _, l := range r.ArgLimits {
			if l.Field == "" {
				return nil, fmt.Errorf("policy: %s: argument limit with empty field", what)
			}
			if e := nameError(l.Field); e != "" {
				return nil, fmt.Errorf("policy: %s: argument limit on %q: the field %s", what, l.Field, e)
			}
			if strings.ContainsAny(l.Field, "./[]") {
				return nil, fmt.Errorf("policy: %s: argument limit on %q: the field must be a top-level argument name, not a path", what, l.Field)
			}
			if math.IsNaN(l.Max) {
				return nil, fmt.Errorf("policy: %s: argument limit on %q has NaN max", what, l.Field)
			}
			if l.Min != nil {
				switch m := *l.Min; {
				case math.IsNaN(m):
					return nil, fmt.Errorf("policy: %s: argument limit on %q has NaN min", what, l.Field)
				case m > l.Max:
					return nil, fmt.Errorf("policy: %s: argument limit on %q: min %v is above max %v: no number passes", what, l.Field, m, l.Max)
				case math.IsInf(m, 1):
					return nil, fmt.Errorf("policy: %s: argument limit on %q: min %v: no number passes", what, l.Field, m)
				}
			}
			if err := checkRoles(l.ExemptRoles, fmt.Sprintf("%s: argument limit on %q", what, l.Field), "exempt roles"); err != nil {
				return nil, err
			}
		}
		if r.Cost == 0 {
			r.Cost = 0 // not -0, which a record would show as "-0"
		}
		r.Roles = slices.Clone(r.Roles)
		r.ArgLimits = slices.Clone(r.ArgLimits)
		for i := range r.ArgLimits {
			l := &r.ArgLimits[i]
			l.ExemptRoles = slices.Clone(l.ExemptRoles)
			if l.Min != nil {
				m := *l.Min
				l.Min = &m
			}
		}
		return &r, nil
	}
	for _, r := range cfg.Tools {
		if r.Name == "" {
			return nil, errors.New("policy: tool rule with empty name")
		}
		if e := nameError(r.Name); e != "" {
			return nil, fmt.Errorf("policy: tool %q: the name %s", r.Name, e)
		}
		if strings.Contains(r.Name, "*") {
			return nil, fmt.Errorf("policy: tool %q: a tool rule names one tool exactly; use a role rule pattern or the default rule for many", r.Name)
		}
		if _, dup := p.tools[r.Name]; dup {
			return nil, fmt.Errorf("policy: duplicate rule for tool %q", r.Name)
		}
		cr, err := check(r, fmt.Sprintf("tool %q", r.Name))
		if err != nil {
			return nil, err
		}
		p.tools[r.Name] = cr
		k := p.addKey(r.Name)
		if _, twice := p.folded[k]; twice {
			p.folded[k] = nil
		} else {
			p.folded[k] = cr
		}
	}
	if cfg.Default != nil {
		cr, err := check(*cfg.Default, "default rule")
		if err != nil {
			return nil, err
		}
		cr.Name = ""
		p.def = cr
	}
	for k, r := range p.folded {
		if r != nil {
			p.folded[k] = p.foldedRule(r)
		}
	}
	for _, rr := range cfg.RoleRules {
		if len(rr.Roles) == 0 {
			return nil, fmt.Errorf("policy: role rule %q lists no roles", rr.Pattern)
		}
		if err := checkRoles(rr.Roles, fmt.Sprintf("role rule %q", rr.Pattern), "roles"); err != nil {
			return nil, err
		}
		pat := rr.Pattern
		switch {
		case pat == "":
			return nil, errors.New("policy: role rule with empty pattern")
		case nameError(strings.TrimSuffix(pat, "*")) != "":
			return nil, fmt.Errorf("policy: role rule %q: the pattern %s", pat, nameError(strings.TrimSuffix(pat, "*")))
		case strings.HasSuffix(pat, "*"):
			prefix := strings.TrimSuffix(pat, "*")
			if strings.Contains(prefix, "*") {
				return nil, fmt.Errorf("policy: role rule %q: only a trailing * is supported", pat)
			}
			if i := strings.IndexAny(prefix, "?[{"); i >= 0 {
				// Glob syntax of other tools: matched literally here,
				// the rule would protect none of the names meant.
				return nil, fmt.Errorf("policy: role rule %q: only a trailing * is pattern syntax; %q would be matched literally, so the rule would protect only names starting %q: list the tools, or use a plain prefix", pat, prefix[i:i+1], prefix)
			}
			p.prefixRoles = append(p.prefixRoles, prefixRule{key: []byte(p.addKey(prefix)), roles: slices.Clone(rr.Roles)})
		case strings.Contains(pat, "*"):
			return nil, fmt.Errorf("policy: role rule %q: only a trailing * is supported", pat)
		default:
			k := p.addKey(pat)
			// Without a default rule only a tool rule's tool runs: a role
			// rule naming none (a typo, "refnd" for refund) protects
			// nothing, and the tool meant runs for every role.
			if _, known := p.folded[k]; !known && p.def == nil && len(cfg.Tools) > 0 {
				return nil, fmt.Errorf("policy: role rule %q names no tool rule (there is no default rule): it protects nothing; name a tool of the policy, or a prefix with a trailing *", pat)
			}
			p.exactRoles[k] = append(p.exactRoles[k], slices.Clone(rr.Roles))
		}
	}
	for _, rr := range p.prefixRoles {
		if len(p.prefixRoles) <= fewPrefixes {
			break // compared one by one (rolesOK)
		}
		if p.byPrefix == nil {
			p.byPrefix = map[string][][]string{}
		}
		p.byPrefix[string(rr.key)] = append(p.byPrefix[string(rr.key)], rr.roles)
		if !slices.Contains(p.prefixLens, len(rr.key)) {
			p.prefixLens = append(p.prefixLens, len(rr.key))
		}
	}
	slices.Sort(p.prefixLens)
	if err := p.checkLimitsApply(cfg); err != nil {
		return nil, err
	}
	for _, w := range cfg.WriteAllowlist {
		if w == "*" {
			p.allWrites = true
			continue
		}
		if w == "" {
			return nil, errors.New("policy: empty name in write allowlist")
		}
		if e := nameError(w); e != "" {
			return nil, fmt.Errorf("policy: write allowlist: %q %s", w, e)
		}
		if strings.Contains(w, "*") {
			return nil, fmt.Errorf("policy: write allowlist: %q: names are exact; only a lone \"*\" is a wildcard", w)
		}
		p.writes[w] = true
	}
	if !p.allWrites {
		if err := p.checkWrites(cfg); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// checkWrites refuses a write allowlist entry that allows nothing (see
// [Policy.Authorize]): one that has no rule (it names no tool rule and
// there is no default rule), or no rule of its own and a rule that is a
// read (the default rule is Read), which needs no allowlist: its author
// took it for a write that no rule classes so; and one that is no tool
// rule's name but equals a write tool rule's name under folding, when
// that rule's name is not listed, since its author surely meant the rule's
// tool. For that last, its error says whether listing that name too would
// make the entry allow its call: not without a default rule, nor when the
// names of several rules fold alike, since a call by the entry's name then
// has no rule (see [Policy.Resolve]); listed together, both are accepted.
func (p *Policy) checkWrites(cfg Config) error {
	var byKey map[string][]string
	for _, w := range cfg.WriteAllowlist {
		if _, exact := p.tools[w]; !exact {
			if byKey == nil {
				byKey = make(map[string][]string)
				for _, r := range cfg.Tools {
					if r.Class == Write {
						k := keyOf(r.Name)
						byKey[k] = append(byKey[k], r.Name)
					}
				}
			}
			k := keyOf(w)
			if names := byKey[k]; len(names) > 0 {
				if err := p.checkFoldedWrite(w, k, names); err != nil {
					return err
				}
				continue
			}
		}
		if err := p.checkWrite(w); err != nil {
			return err
		}
	}
	return nil
}

// checkFoldedWrite refuses the write allowlist entry w, of key k, which is
// no tool rule's name but equals the names of the write tool rules names
// under folding, when one of names is not listed.
func (p *Policy) checkFoldedWrite(w, k string, names []string) error {
	for _, name := range names {
		switch {
		case p.writes[name]:
		case p.folded[k] != nil:
			return fmt.Errorf("policy: write allowlist: %q is the write tool %q only under case folding, and allows nothing unless %q is listed too (names are exact)", w, name, name)
		default:
			why := "there is no default rule"
			if p.def != nil {
				why = "the names of several tool rules fold alike"
			}
			return fmt.Errorf("policy: write allowlist: %q is the write tool %q only under case folding, and allows nothing: names are exact, and a call by %q has no rule (%s); list %q instead", w, name, w, why, name)
		}
	}
	return nil
}

// checkWrite refuses the write allowlist entry w when it has no rule, or
// no rule of its own and a rule that is a read (the default rule's, or a
// read tool's combined with it). An entry naming a read tool's own rule is
// accepted: its author classed the tool, and the entry changes nothing.
func (p *Policy) checkWrite(w string) error {
	if _, own := p.tools[w]; own {
		return nil
	}
	r, ok := p.Resolve(w)
	switch {
	case ok && r.Class == Write:
		return nil
	case !ok && p.foldsLike(w) != "":
		return fmt.Errorf("policy: write allowlist: %q has no rule: it is the tool %q only under case folding, and allows nothing (names are exact)", w, p.foldsLike(w))
	case !ok:
		return fmt.Errorf("policy: write allowlist: %q names no tool rule, and there is no default rule: it allows nothing (names are exact)", w)
	case r.Name != "":
		return fmt.Errorf("policy: write allowlist: %q has no rule of its own: it is the read tool %q only under case folding, which needs no allowlist, and allows nothing (names are exact)", w, r.Name)
	}
	return fmt.Errorf("policy: write allowlist: %q has no rule of its own, and the default rule makes it a read, which needs no allowlist: it allows nothing; give the tool a Write rule if it writes", w)
}

// checkLimitsApply refuses an argument limit that applies to no caller:
// one whose exempt roles include every role of a role set each caller of
// its rule must have one of (the rule's Roles, or the roles of a role rule
// matching the tool's name; for the default rule, of a lone "*"). Its
// author meant it to limit some role.
func (p *Policy) checkLimitsApply(cfg Config) error {
	check := func(r *ToolRule, what string, sets [][]string) error {
		for _, l := range r.ArgLimits {
			for _, set := range sets {
				if len(set) > 0 && len(l.ExemptRoles) > 0 && allIn(set, l.ExemptRoles) {
					return fmt.Errorf("policy: %s: argument limit on %q never applies: each caller of the tool has one of the roles %q, and the limit exempts them all", what, l.Field, set)
				}
			}
		}
		return nil
	}
	for _, tr := range cfg.Tools {
		r := p.tools[tr.Name]
		k := keyOf(r.Name)
		sets := append([][]string{r.Roles}, p.exactRoles[k]...)
		for _, rr := range p.prefixRoles {
			if strings.HasPrefix(k, string(rr.key)) {
				sets = append(sets, rr.roles)
			}
		}
		if err := check(r, fmt.Sprintf("tool %q", r.Name), sets); err != nil {
			return err
		}
	}
	if p.def != nil {
		sets := [][]string{p.def.Roles}
		for _, rr := range p.prefixRoles {
			if len(rr.key) == 0 {
				sets = append(sets, rr.roles)
			}
		}
		return check(p.def, "default rule", sets)
	}
	return nil
}

// allIn reports whether every role of roles is one of in.
func allIn(roles, in []string) bool {
	for _, r := range roles {
		if !slices.Contains(in, r) {
			return false
		}
	}
	return true
}

// addKey returns the key of name, a rule's name or pattern, and makes it
// count for maxKey.
func (p *Policy) addKey(name string) string {
	k := keyOf(name)
	p.maxKey = max(p.maxKey, len(k))
	return k
}

// foldedRule returns the rule of a name that equals the name of r only
// under folding: at a server that matches names leniently it is r's tool,
// at one that does not (the go-sdk's) another, which the default rule
// governs; which cannot be told, so both apply. Without a default rule
// such a name has no rule (nil). The rule is r's with the default's class
// if that is Write, the larger cost, a confirmation if either needs one,
// the argument limits of both, and the roles of both (see also).
func (p *Policy) foldedRule(r *ToolRule) *ToolRule {
	if p.def == nil {
		return nil
	}
	m := *r
	m.Class = max(r.Class, p.def.Class) // Write is the larger
	m.Cost = max(r.Cost, p.def.Cost)
	m.Confirm = r.Confirm || p.def.Confirm
	m.ArgLimits = slices.Concat(r.ArgLimits, p.def.ArgLimits)
	switch {
	case len(r.Roles) == 0:
		m.Roles = p.def.Roles
	case len(p.def.Roles) > 0:
		if p.also == nil {
			p.also = map[*ToolRule][]string{}
		}
		p.also[&m] = p.def.Roles
	}
	return &m
}

// checkRoles refuses a role list with an empty role name, a name that
// nameError refuses, or a lone "*": roles are matched exactly, so a "*"
// would grant or exempt only a caller whose role is literally "*", never
// everyone, as its author surely meant. A "*" within a name is kept: scopes
// become roles, and a scope such as "api:*" is a name like any other.
// what names the rule and list the list in the error.
func checkRoles(roles []string, what, list string) error {
	for _, r := range roles {
		if r == "" {
			return fmt.Errorf("policy: %s: empty role name in %s", what, list)
		}
		if e := nameError(r); e != "" {
			return fmt.Errorf("policy: %s: role %q in %s %s", what, r, list, e)
		}
		if r == "*" {
			return fmt.Errorf("policy: %s: role %q in %s: roles are exact names, and a lone \"*\" is not a wildcard", what, r, list)
		}
	}
	return nil
}

// CheckName returns an error saying what is wrong with name when [New]
// would refuse it as a name in its configuration: empty, invalid UTF-8, a
// control or invisible formatting character (but a joiner within a word),
// white space at an end, nothing but default-ignorable characters. A gateway
// applies it to the tool names it is called with: a downstream that trims
// or drops such characters could otherwise run a protected tool under a
// name no rule matches.
func CheckName(name string) error {
	if name == "" {
		return errors.New("policy: the name is empty")
	}
	if e := nameError(name); e != "" {
		return fmt.Errorf("policy: the name %q %s", name, e)
	}
	return nil
}

// nameError says what is wrong with a name from the configuration (a tool
// name, a pattern, a role, an argument field, an allowlist entry), or
// returns "". Invalid UTF-8, control and invisible formatting characters,
// and white space at either end are refused: they come from a copied or
// split list, and the name then matches nothing, so the rule silently
// does not apply where it was meant to. So is a name of default-ignorable
// characters only (variation selectors, a Hangul filler): it is invisible,
// and its key is empty, so that a pattern of them matched every tool. A
// zero-width joiner or non-joiner between two visible non-ASCII characters
// is accepted: Persian, the Indic scripts and emoji sequences write words
// with them.
func nameError(s string) string {
	// Most names are ASCII: checked byte by byte, without the Unicode
	// tables (a gateway checks every tools/call's name).
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
		if c < 0x20 || c == 0x7f {
			return "contains a control or invisible character"
		}
	}
	if ascii {
		if s != "" && (s[0] == ' ' || s[len(s)-1] == ' ') {
			return "has white space at an end"
		}
		return ""
	}
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	seen := false // a character that is not default-ignorable
	for i, r := range s {
		if invisible(r) && !joinerWithinWord(s, i, r) {
			return "contains a control or invisible character"
		}
		seen = seen || !ignorable(r)
	}
	if !seen {
		// Its key is empty: as a pattern's prefix it would match every
		// name, as a name every other invisible one.
		return "consists only of invisible (default-ignorable) characters"
	}
	if strings.TrimSpace(s) != s {
		return "has white space at an end"
	}
	return ""
}

// invisible reports a control, invisible formatting, or line or paragraph
// separator character.
func invisible(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// joinerWithinWord reports whether r, at byte i of s, is a zero-width
// non-joiner or joiner (U+200C, U+200D) with a visible non-ASCII character
// on each side, as in words of scripts that use them.
func joinerWithinWord(s string, i int, r rune) bool {
	if r != '\u200c' && r != '\u200d' {
		return false
	}
	before, _ := utf8.DecodeLastRuneInString(s[:i])
	after, _ := utf8.DecodeRuneInString(s[i+utf8.RuneLen(r):])
	visible := func(c rune) bool {
		return c >= utf8.RuneSelf && c != utf8.RuneError && !invisible(c) && !unicode.IsSpace(c)
	}
	return visible(before) && visible(after)
}

// Resolve returns the rule for tool: its own rule, else the rule of the
// one tool whose name equals tool under case folding combined with the
// default rule (see below), else the default rule, else ok is false. The
// returned rule must not be modified.
//
// Rules apply to names under case folding as well as exactly: "admin_*"
// demands its roles of "ADMIN_reset_key" too, and of every other spelling
// that a lower-casing, upper-casing or case-folding server would take for
// a name the rule matches: under Unicode full case folding ("ß" is "ss"),
// with the case pairs of Unicode 16 and 17 (which Go's tables lack), with
// the Turkish dotted and dotless i taken for i (as Go's strings.ToLower
// and ToUpper map them), and so an i with a combining dot above (as Python
// and JavaScript lower-case "İ"), and with default-ignorable characters
// (format characters, variation selectors) left out. The MCP
// specification compares tool names case-sensitively, but a server that
// matches names leniently must not be offered a protected tool under a
// spelling no rule names. Other compatibility forms (a full-width "ａ")
// are other names. The write allowlist is matched exactly (but see
// [Policy.Authorize]).
//
// A name that equals a tool rule's name only under folding is that tool
// at a server that matches names leniently, and another tool, which the
// default rule governs, at one that does not (the go-sdk's); which cannot
// be told, so it gets both rules at once: that rule with the default's
// class if that is Write, the larger cost, a confirmation if either needs
// one, and the argument limits and roles of both ([Policy.RequiredRoles]
// lists them; the returned rule's Roles are the tool rule's, or the
// default's when the tool rule has none). Without a default rule, or when
// the names of two rules fold alike and tool is neither of them, no rule
// can be told to apply, and ok is false.
func (p *Policy) Resolve(tool string) (rule *ToolRule, ok bool) {
	if r, ok := p.tools[tool]; ok {
		return r, true
	}
	var buf [keyBufSize]byte
	return p.resolve(tool, p.key(buf[:0], tool))
}

// key appends the key of tool to dst, cut once it is longer than any of
// the policy's keys.
func (p *Policy) key(dst []byte, tool string) []byte {
	return appendKey(dst, tool, p.maxKey)
}

// resolve is Resolve with the key k of tool.
func (p *Policy) resolve(tool string, k []byte) (*ToolRule, bool) {
	if r, ok := p.tools[tool]; ok {
		return r, true
	}
	if r, ok := p.folded[string(k)]; ok {
		return r, r != nil
	}
	if p.def != nil {
		return p.def, true
	}
	return nil, false
}

// RequiredRoles returns the role sets the tool demands: each inner slice is
// satisfied by any one of its roles, and all must be satisfied. Nil means
// anyone may call it (subject to the write allowlist), or that no rule
// matches tool ([Policy.Authorize] then refuses it). The slices are the
// caller's: changing them does not change p.
func (p *Policy) RequiredRoles(tool string) [][]string {
	var buf [keyBufSize]byte
	k := p.key(buf[:0], tool)
	var out [][]string
	if r, ok := p.resolve(tool, k); ok {
		if len(r.Roles) > 0 {
			out = append(out, slices.Clone(r.Roles))
		}
		if roles := p.also[r]; len(roles) > 0 {
			out = append(out, slices.Clone(roles))
		}
	}
	for _, roles := range p.exactRoles[string(k)] {
		out = append(out, slices.Clone(roles))
	}
	for _, rr := range p.prefixRoles {
		if bytes.HasPrefix(k, rr.key) {
			out = append(out, slices.Clone(rr.roles))
		}
	}
	return out
}

// rolesOK reports whether pr satisfies every role requirement of the tool
// whose key is k and whose rule is r. It does not allocate.
func (p *Policy) rolesOK(pr *Principal, k []byte, r *ToolRule) bool {
	if !pr.hasAny(r.Roles) {
		return false
	}
	if len(p.also) > 0 && !pr.hasAny(p.also[r]) {
		return false
	}
	for _, roles := range p.exactRoles[string(k)] {
		if !pr.hasAny(roles) {
			return false
		}
	}
	if p.byPrefix == nil {
		for _, rr := range p.prefixRoles {
			if bytes.HasPrefix(k, rr.key) && !pr.hasAny(rr.roles) {
				return false
			}
		}
		return true
	}
	for _, n := range p.prefixLens {
		if n > len(k) {
			break
		}
		for _, roles := range p.byPrefix[string(k[:n])] {
			if !pr.hasAny(roles) {
				return false
			}
		}
	}
	return true
}

// Visible reports whether pr may see tool in a listing. A tool without a
// rule is never visible; a tool pr lacks the roles for is visible only when
// the policy was built with ShowForbidden.
func (p *Policy) Visible(pr *Principal, tool string) bool {
	var buf [keyBufSize]byte
	k := p.key(buf[:0], tool)
	r, ok := p.resolve(tool, k)
	if !ok {
		return false
	}
	return p.showForbidden || p.rolesOK(pr, k, r)
}

// WriteAllowed reports whether tool is on the write allowlist.
// [Policy.Authorize] asks more of a name that equals a write tool rule's
// name only under folding: that rule's name must be on the allowlist too.
func (p *Policy) WriteAllowed(tool string) bool {
	return p.allWrites || p.writes[tool]
}

// Code classifies a [Decision].
type Code uint8

const (
	// Allowed: the call may proceed.
	Allowed Code = iota
	// NotFound: no rule for the tool, or the tool is hidden from the caller.
	NotFound
	// Forbidden: the caller lacks a required role, or an argument limit refused the call.
	Forbidden
	// WriteNotAllowed: a write tool that is not on the write allowlist.
	WriteNotAllowed
)

// String returns the error-contract name of c: "", "TOOL_NOT_FOUND",
// "FORBIDDEN" or "WRITE_NOT_ALLOWED".
func (c Code) String() string {
	switch c {
	case NotFound:
		return "TOOL_NOT_FOUND"
	case Forbidden:
		return "FORBIDDEN"
	case WriteNotAllowed:
		return "WRITE_NOT_ALLOWED"
	}
	return ""
}

// A Decision is the answer of [Policy.Decide].
type Decision struct {
	// Code is Allowed or the reason for the refusal.
	Code Code
	// Rule is the rule that applied; nil when Code is NotFound. It is the
	// policy's own (see [Policy.Resolve]) and must not be modified.
	Rule *ToolRule
	// Reason is a short human-readable explanation without argument values.
	Reason string
}

// Allowed reports whether the call may proceed.
func (d Decision) Allowed() bool { return d.Code == Allowed }

// Args gives [Policy.Decide] access to the call's top-level arguments
// without tying the policy to one JSON decoding. Number returns the value
// of a numeric field and whether it was present and numeric.
type Args interface {
	Number(field string) (float64, bool)
}

// ExactArgs is an [Args] that also gives the JSON text of a numeric field,
// so that [Policy.CheckArgs] compares the number by its exact value (see
// [ArgLimit].Max), which a float64 may round or, past 800 digits, misread: "100.000000000000001"
// is 100 as a float64, yet above a Max of 100, and a handler that decodes
// it exactly (an int64, a json.Number, a decimal type) acts on more than
// the limit. NumberText
// returns ok false for a field whose value it holds as a float64 only,
// which is then taken as exact. [MapArgs] is an ExactArgs; so is the
// gateway's view of the raw arguments.
type ExactArgs interface {
	Args
	NumberText(field string) (string, bool)
}

// MapArgs adapts decoded JSON arguments to [Args] and [ExactArgs].
type MapArgs map[string]any

// Number implements [Args]. Only finite float64 values (as encoding/json
// decodes numbers) and json.Number count as numbers (a json.Number as the
// float64 nearest to its value, which json.Number.Float64 misses for one
// with more than 800 digits before its point); booleans and strings
// do not, nor do a NaN or infinite float64 or a json.Number whose text is not
// JSON number syntax ("-Inf", "0x1p3", "+5"): no JSON call carries them,
// and a handler may read them otherwise than the limit did. Nor do other
// types with a Float64 method (another JSON library's number): their text
// would not be checked and compared exactly as a json.Number's is.
// A field is read only under its exact name, and not at all when another
// key equals it but for letter case ("Seats", "\u017feats" for "seats"),
// '_' and '-' ("s_eats", "-SEATS"): encoding/json would give a handler's
// struct field a case variant's value, and encoding/json/v2's
// case-insensitive matching (MatchCaseInsensitiveNames, a `case:ignore`
// tag) also a variant with other underscores and dashes (foldkey.EqualName).
func (m MapArgs) Number(field string) (float64, bool) {
	for k := range m {
		if k != field && foldkey.EqualName([]byte(k), []byte(field)) {
			return 0, false
		}
	}
	switch v := m[field].(type) {
	case float64:
		return v, !math.IsInf(v, 0) && !math.IsNaN(v)
	case json.Number:
		return jsonnum.Float(string(v))
	}
	return 0, false
}

// NumberText implements [ExactArgs]: the text of a json.Number value (as
// encoding/json gives with UseNumber). Like Number, it reads nothing when
// another key equals field but for letter case, '_' and '-'.
func (m MapArgs) NumberText(field string) (string, bool) {
	if _, ok := m.Number(field); !ok {
		return "", false
	}
	n, ok := m[field].(json.Number)
	return string(n), ok
}

// Decide says whether pr may call tool with args: [Policy.Authorize], then
// [Policy.CheckArgs]. Args may be nil when the tool has no argument limits
// that apply to pr; when some apply and args is nil, the call is refused
// (fail closed).
// Decide does not allocate on the allowed path.
func (p *Policy) Decide(pr *Principal, tool string, args Args) Decision {
	d := p.Authorize(pr, tool)
	if d.Code != Allowed {
		return d
	}
	return p.CheckArgs(pr, d.Rule, args)
}

// Authorize checks everything but the arguments, in this order: a rule
// exists (else NotFound), roles (NotFound when hidden, Forbidden with
// ShowForbidden), write allowlist (WriteNotAllowed). A name that equals a
// write tool rule's name only under folding runs only when both it and
// that rule's name are on the allowlist.
func (p *Policy) Authorize(pr *Principal, tool string) Decision {
	var buf [keyBufSize]byte
	k := p.key(buf[:0], tool)
	r, ok := p.resolve(tool, k)
	if !ok {
		return Decision{Code: NotFound, Reason: "unknown tool"}
	}
	if !p.rolesOK(pr, k, r) {
		if !p.showForbidden {
			return Decision{Code: NotFound, Reason: "unknown tool"}
		}
		return Decision{Code: Forbidden, Rule: r, Reason: "caller lacks a required role"}
	}
	if r.Class == Write && !p.writeAllowed(tool, r) {
		return Decision{Code: WriteNotAllowed, Rule: r, Reason: "write tool is not on the write allowlist"}
	}
	return Decision{Code: Allowed, Rule: r}
}

// writeAllowed reports whether the write tool whose rule is r may run when
// called as tool: tool is on the write allowlist, and, when r is the rule
// of a name that equals a write tool rule's name only under folding (see
// [Policy.Resolve]), so is that rule's name, since at a server that matches
// names leniently the call runs that tool.
func (p *Policy) writeAllowed(tool string, r *ToolRule) bool {
	if !p.WriteAllowed(tool) {
		return false
	}
	if r.Name == tool || r.Name == "" { // its own rule, or the default
		return true
	}
	own, ok := p.tools[r.Name]
	return !ok || own.Class != Write || p.WriteAllowed(r.Name)
}

// CheckArgs applies the argument limits of rule r (as returned by
// [Policy.Authorize]) for pr. A nil args fails every limit that applies.
// A value is refused when it is NaN or its float64 exceeds Max or is below
// a non-nil Min; a value from an [ExactArgs] that has its text (a
// json.Number in a [MapArgs]) is also compared by its exact decimal value
// with the shortest decimals that read as Max and Min (see [ArgLimit].Max),
// and refused when it is larger or smaller, or when its text is not a JSON
// number. The text decides even when the float64 is within the bounds:
// strconv.ParseFloat misreads a number with more than 800 digits before
// its point ("1", 1000 zeros, "e-990" is 1e10, read as 1e-191). A nil r
// (the rule of a NotFound decision) refuses the call with NotFound.
func (p *Policy) CheckArgs(pr *Principal, r *ToolRule, args Args) Decision {
	if r == nil {
		return Decision{Code: NotFound, Reason: "unknown tool"}
	}
	for _, l := range r.ArgLimits {
		if len(l.ExemptRoles) > 0 && pr.hasAny(l.ExemptRoles) {
			continue
		}
		if args == nil {
			return Decision{Code: Forbidden, Rule: r, Reason: "argument " + l.Field + " cannot be checked"}
		}
		v, ok := args.Number(l.Field)
		if !ok {
			return Decision{Code: Forbidden, Rule: r, Reason: "argument " + l.Field + " must be a number for this caller"}
		}
		if math.IsNaN(v) || v > l.Max || aboveMax(args, l.Field, l.Max) {
			return Decision{Code: Forbidden, Rule: r, Reason: "argument " + l.Field + " exceeds the limit for this caller"}
		}
		if l.Min != nil && (v < *l.Min || belowMin(args, l.Field, *l.Min)) {
			return Decision{Code: Forbidden, Rule: r, Reason: "argument " + l.Field + " is below the limit for this caller"}
		}
	}
	return Decision{Code: Allowed, Rule: r}
}

// HasArgLimits reports whether Decide needs the arguments of tool.
func (p *Policy) HasArgLimits(tool string) bool {
	r, ok := p.Resolve(tool)
	return ok && len(r.ArgLimits) > 0
}

// CheckTool is the registration check for a tool the server exposes. It
// returns an error when [Policy.Resolve] finds no rule for the tool (it has
// none of its own and there is no default, or its name equals the names of
// two rules only under case folding), or when readOnlyHint is non-nil and
// contradicts the rule's class (a read rule for a tool hinting it writes,
// or a write rule for a tool hinting read-only).
// The annotation is a hint a client must not trust; the rule stays the
// source of truth, and a mismatch means the configuration is wrong.
func (p *Policy) CheckTool(name string, readOnlyHint *bool) error {
	r, ok := p.Resolve(name)
	if !ok {
		if like := p.foldsLike(name); like != "" {
			return fmt.Errorf("policy: tool %q has no rule: its name equals that of the rule for %q only under case folding; give it a rule of its own", name, like)
		}
		return fmt.Errorf("policy: tool %q has no rule", name)
	}
	if readOnlyHint != nil {
		if *readOnlyHint && r.Class == Write {
			return fmt.Errorf("policy: tool %q is a write in the policy but annotated ReadOnlyHint: true; drop the hint, or make the tool a read in the policy", name)
		}
		if !*readOnlyHint && r.Class == Read {
			return fmt.Errorf("policy: tool %q is a read in the policy but its annotations leave ReadOnlyHint false (its value when Annotations are set without it), which says it may write; set ReadOnlyHint: true, or make the tool a write in the policy", name)
		}
	}
	return nil
}

// foldsLike returns the first name, sorted, of a tool rule whose name
// equals name under folding, or "".
func (p *Policy) foldsLike(name string) string {
	k := keyOf(name)
	for _, n := range p.Tools() {
		if keyOf(n) == k {
			return n
		}
	}
	return ""
}

// WriteAllowlist returns the entries of the write allowlist, sorted: a
// lone "*" when it allows every write, none when it is empty.
func (p *Policy) WriteAllowlist() []string {
	if p.allWrites {
		return []string{"*"}
	}
	names := make([]string, 0, len(p.writes))
	for n := range p.writes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Tools returns the names of the tools with their own rule, sorted.
func (p *Policy) Tools() []string {
	names := make([]string, 0, len(p.tools))
	for n := range p.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
