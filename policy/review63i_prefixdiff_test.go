package policy

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestReview63iPrefixLookupAsLoop: rolesOK's lookup of a tool's prefixes
// by length (63e) decides as the loop over every prefix rule it replaced,
// for random policies: role rules with overlapping, equal and case-folded
// prefixes (of one or more bytes of multi-byte letters too), "*" alone, and
// tool names longer than any key (cut at maxKey), for callers of random
// roles.
func TestReview63iPrefixLookupAsLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 9))
	atoms := []string{"a", "A", "b", "_", "ß", "SS", "ss", "é", "É", "ﬀ", "K", "k", "\u212a", "x"}
	word := func(n int) string {
		var b []byte
		for range n {
			b = append(b, atoms[rng.IntN(len(atoms))]...)
		}
		return string(b)
	}
	roles := []string{"r1", "r2", "r3"}
	pick := func() []string {
		var out []string
		for _, r := range roles {
			if rng.IntN(2) == 0 {
				out = append(out, r)
			}
		}
		if len(out) == 0 {
			out = []string{roles[rng.IntN(len(roles))]}
		}
		return out
	}
	old := func(p *Policy, pr *Principal, k []byte, r *ToolRule) bool {
		if !pr.hasAny(r.Roles) || len(p.also) > 0 && !pr.hasAny(p.also[r]) {
			return false
		}
		for _, roles := range p.exactRoles[string(k)] {
			if !pr.hasAny(roles) {
				return false
			}
		}
		for _, rr := range p.prefixRoles {
			if bytes.HasPrefix(k, rr.key) && !pr.hasAny(rr.roles) {
				return false
			}
		}
		return true
	}
	made, mapped, checked, differ := 0, 0, 0, 0
	for range 3000 {
		var cfg Config
		for range 1 + rng.IntN(4) {
			cfg.Tools = append(cfg.Tools, ToolRule{Name: "t" + word(rng.IntN(4)), Class: Read})
		}
		cfg.Default = &ToolRule{Class: Read}
		for range rng.IntN(2 * fewPrefixes) { // compared one by one, and looked up
			pat := word(rng.IntN(4)) + "*"
			if rng.IntN(3) == 0 {
				pat = "t" + pat
			}
			cfg.RoleRules = append(cfg.RoleRules, RoleRule{Pattern: pat, Roles: pick()})
		}
		p, err := New(cfg)
		if err != nil {
			continue
		}
		made++
		if p.byPrefix != nil {
			mapped++
		}
		for range 20 {
			name := word(rng.IntN(9))
			if rng.IntN(2) == 0 {
				name = "t" + name
			}
			var buf [keyBufSize]byte
			k := p.key(buf[:0], name)
			r, ok := p.resolve(name, k)
			if !ok {
				continue
			}
			pr := &Principal{Subject: "u", Roles: pick()[:rng.IntN(2)]}
			checked++
			if got, want := p.rolesOK(pr, k, r), old(p, pr, k, r); got != want {
				differ++
				if differ < 5 {
					t.Errorf("tool %q, roles %v, rules %+v: rolesOK %v, the loop %v", name, pr.Roles, cfg.RoleRules, got, want)
				}
			}
		}
	}
	t.Logf("%d policies (%d with their prefixes looked up), %d checks", made, mapped, checked)
	if made < 1000 || mapped < 300 || checked < 10000 {
		t.Fatalf("only %d policies (%d looked up), %d checks", made, mapped, checked)
	}
}
