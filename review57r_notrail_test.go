package mcpguard_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview57rSetPolicyWarnsOfWritesWithoutTrail: New warns when its
// policy allows writes and the guard has no audit sink (every write is
// then refused AUDIT_UNAVAILABLE), but a guard made with a read-only policy
// and given one that allows writes by SetPolicy (a reload) said nothing:
// its writes were refused from then on with no word until the first one.
// SetPolicy warns now when it allows writes that the policy before it did
// not; not again for a policy that allows the same ones.
func TestReview57rSetPolicyWarnsOfWritesWithoutTrail(t *testing.T) {
	rules := []policy.ToolRule{{Name: "pay", Class: policy.Write}, {Name: "get", Class: policy.Read}}
	reads, err := policy.New(policy.Config{Tools: rules})
	if err != nil {
		t.Fatal(err)
	}
	writes := func() *policy.Policy {
		p, err := policy.New(policy.Config{Tools: rules, WriteAllowlist: []string{"pay"}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	const warning = "Options.Audit is nil"
	for _, c := range []struct {
		name string
		opts mcpguard.Options
		warn bool
	}{
		{"no sink", mcpguard.Options{}, true},
		{"a sink", mcpguard.Options{Audit: &memSink{}}, false},
		{"NoWriteAhead", mcpguard.Options{NoWriteAhead: true}, false},
	} {
		var logs bytes.Buffer
		c.opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		g, err := mcpguard.New(reads, fixed(bob), &c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(logs.String(), warning) {
			t.Fatalf("%s: New warned of a read-only policy:\n%s", c.name, logs.String())
		}
		if err := g.SetPolicy(writes()); err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(logs.String(), warning) && strings.Contains(logs.String(), "write_allowlist=pay")
		if got != c.warn {
			t.Errorf("%s: SetPolicy warned %v, want %v; logs:\n%s", c.name, got, c.warn, logs.String())
		}
		n := strings.Count(logs.String(), warning)
		if err := g.SetPolicy(writes()); err != nil { // a reload of the same allowlist
			t.Fatal(err)
		}
		if m := strings.Count(logs.String(), warning); m != n {
			t.Errorf("%s: a reload allowing the same writes warned again:\n%s", c.name, logs.String())
		}
	}
}
