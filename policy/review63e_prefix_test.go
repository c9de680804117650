package policy

import (
	"fmt"
	"testing"
	"time"
)

// rv63eListing returns the shortest of three passes of Visible over every
// tool of a policy of tools tool rules and pats role rule prefixes
// ("t000_*"), each tool under one of them, for a caller with one of each
// rule's roles.
func rv63eListing(t *testing.T, tools, pats int) time.Duration {
	t.Helper()
	var cfg Config
	for i := range tools {
		cfg.Tools = append(cfg.Tools, ToolRule{Name: fmt.Sprintf("t%03d_tool_%05d", i%pats, i), Class: Read})
	}
	for i := range pats {
		cfg.RoleRules = append(cfg.RoleRules, RoleRule{Pattern: fmt.Sprintf("t%03d_*", i), Roles: []string{"r", "s"}})
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pr := &Principal{Subject: "u", Roles: []string{"a", "s"}}
	best := time.Duration(1<<63 - 1)
	for range 3 {
		start := time.Now()
		for _, r := range cfg.Tools {
			if !p.Visible(pr, r.Name) {
				t.Fatalf("%s not visible", r.Name)
			}
		}
		best = min(best, time.Since(start))
	}
	return best
}

// TestVisibleNotScanningEveryPrefix: a listing asks Visible of every tool,
// and a guard's SetPolicy, for every open session, twice per tool (the old
// policy's view and the new one's) while every tools/list waits. Visible
// compared the tool's name with the prefix of every role rule, so a policy
// four times the size (tools and role rules) made a listing 16 times as
// long: with 5,000 tools and 500 prefixes one pass took about 11 ms, and a
// SetPolicy with 1,000 sessions open about 22 s of work holding up every
// tools/list. Finding the rules whose prefix a name has must not cost a
// comparison per rule.
func TestVisibleNotScanningEveryPrefix(t *testing.T) {
	const tools, pats = 1000, 100
	small := rv63eListing(t, tools, pats)
	big := rv63eListing(t, 4*tools, 4*pats)
	t.Logf("Visible over %d tools, %d prefixes: %v; %d tools, %d prefixes: %v (%.1fx)",
		tools, pats, small, 4*tools, 4*pats, big, float64(big)/float64(small))
	if big > 8*small && big > 5*time.Millisecond {
		t.Errorf("Visible over every tool of a policy of %d tools and %d role prefixes took %v, of %d and %d %v: %.1fx for a policy 4x the size (quadratic)",
			tools, pats, small, 4*tools, 4*pats, big, float64(big)/float64(small))
	}
}

// TestVisiblePrefixLookupAllocatesNothing: Visible and Decide look the
// prefixes up without allocating, as before.
func TestVisiblePrefixLookupAllocatesNothing(t *testing.T) {
	p, err := New(Config{
		Tools:     []ToolRule{{Name: "admin_reset", Class: Read}, {Name: "get", Class: Read}},
		RoleRules: []RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}, {Pattern: "adm*", Roles: []string{"ops", "admin"}}, {Pattern: "*", Roles: []string{"user", "admin"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	admin := &Principal{Subject: "a", Roles: []string{"admin"}}
	user := &Principal{Subject: "u", Roles: []string{"user"}}
	if !p.Visible(admin, "admin_reset") || p.Visible(user, "admin_reset") ||
		!p.Visible(user, "get") || p.Visible(&Principal{Subject: "o", Roles: []string{"ops"}}, "admin_reset") {
		t.Fatal("prefix rules decide other than their patterns say")
	}
	if n := testing.AllocsPerRun(100, func() {
		p.Visible(admin, "admin_reset")
		p.Decide(admin, "admin_reset", nil)
	}); n != 0 {
		t.Errorf("Visible and Decide allocate %v times", n)
	}
}
