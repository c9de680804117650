package mcpguard_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview57WarnsOfWritesWithoutTrail: a guard whose policy allows writes
// and that has no audit sink refuses every write AUDIT_UNAVAILABLE (no
// write-ahead record can be made), as documented, but said nothing until
// the first write. New warns of it now; not with a sink, with NoWriteAhead,
// or with no write allowed.
func TestReview57WarnsOfWritesWithoutTrail(t *testing.T) {
	writes, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Write}}, WriteAllowlist: []string{"pay"}})
	if err != nil {
		t.Fatal(err)
	}
	reads, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Write}, {Name: "get", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		pol  *policy.Policy
		opts mcpguard.Options
		warn bool
	}{
		{"writes, no sink", writes, mcpguard.Options{}, true},
		{"writes, a sink", writes, mcpguard.Options{Audit: &memSink{}}, false},
		{"writes, NoWriteAhead", writes, mcpguard.Options{NoWriteAhead: true}, false},
		{"no writes allowed", reads, mcpguard.Options{}, false},
	} {
		var logs bytes.Buffer
		c.opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		if _, err := mcpguard.New(c.pol, fixed(bob), &c.opts); err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(logs.String(), "Options.Audit is nil") && strings.Contains(logs.String(), "write_allowlist=pay")
		if got != c.warn {
			t.Errorf("%s: warned %v, want %v; logs:\n%s", c.name, got, c.warn, logs.String())
		}
	}
}
