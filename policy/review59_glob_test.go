package policy_test

import (
	"math"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview59GlobSyntaxRefused: a role rule written in another tool's
// glob syntax ("admin_[a-z]*", "admin_?*", "{admin,ops}_*") was taken and
// matched literally, so it protected none of the tools meant, which ran
// for every role; New refuses it now. A plain prefix and an exact name
// with such a character (not a pattern) are still taken.
func TestReview59GlobSyntaxRefused(t *testing.T) {
	tools := []policy.ToolRule{{Name: "admin_reset", Class: policy.Read}, {Name: "odd[1]", Class: policy.Read}}
	for _, pat := range []string{"admin_[a-z]*", "admin_?*", "{admin,ops}_*"} {
		_, err := policy.New(policy.Config{Tools: tools, RoleRules: []policy.RoleRule{{Pattern: pat, Roles: []string{"admin"}}}})
		if err == nil || !strings.Contains(err.Error(), "matched literally") {
			t.Errorf("pattern %q: err %v, want refused (matched literally)", pat, err)
		}
	}
	for _, pat := range []string{"admin_*", "odd[1]"} {
		p, err := policy.New(policy.Config{Tools: tools, RoleRules: []policy.RoleRule{{Pattern: pat, Roles: []string{"admin"}}}})
		if err != nil {
			t.Errorf("pattern %q: %v", pat, err)
			continue
		}
		name := strings.Replace(pat, "*", "reset", 1)
		if d := p.Authorize(&policy.Principal{Subject: "u", Roles: []string{"viewer"}}, name); d.Allowed() {
			t.Errorf("pattern %q: %s allowed for a viewer", pat, name)
		}
	}
}

// TestReview59NegativeZeroCost: a rule's cost of -0 (a JSON "cost": -0)
// passed the non-negative check and stayed -0, which a record and a
// refusal's figures show as "-0"; it is 0 now.
func TestReview59NegativeZeroCost(t *testing.T) {
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "t", Class: policy.Read, Cost: math.Copysign(0, -1)}}})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := p.Resolve("t")
	if r == nil || math.Signbit(r.Cost) {
		t.Errorf("rule %+v: cost is -0, want 0", r)
	}
}
