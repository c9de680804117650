package policy

import (
	"strings"
	"testing"
)

// An allowlist entry that names a write tool rule only under folding, with
// the rule's own name not listed, allows nothing: the call by either name
// is refused. New refuses it as the mistake it is, naming the rule.
func TestAllowlistFoldedEntryRefused(t *testing.T) {
	cfg := Config{
		Tools:          []ToolRule{{Name: "trigger_refund", Class: Write}},
		WriteAllowlist: []string{"Trigger_Refund"},
	}
	_, err := New(cfg)
	if err == nil || !strings.Contains(err.Error(), `"trigger_refund"`) {
		t.Fatalf("New = %v, want an error naming trigger_refund", err)
	}

	// Listed with the rule's own name, it is accepted (it allows its call
	// with a default rule; without one, as here, that call is unknown).
	cfg.WriteAllowlist = []string{"Trigger_Refund", "trigger_refund"}
	if _, err := New(cfg); err != nil {
		t.Fatalf("both names listed: New = %v", err)
	}
	// A lone "*" allows every write: nothing to refuse.
	cfg.WriteAllowlist = []string{"*", "Trigger_Refund"}
	if _, err := New(cfg); err != nil {
		t.Fatalf("with *: New = %v", err)
	}
	// A read rule's folded name on the allowlist is harmless (reads need no
	// allowlist) and a name folding onto nothing may be a tool the default
	// rule covers: both accepted.
	cfg = Config{
		Tools:          []ToolRule{{Name: "get_order", Class: Read}},
		Default:        &ToolRule{Class: Write},
		WriteAllowlist: []string{"Get_Order", "other_tool"},
	}
	if _, err := New(cfg); err != nil {
		t.Fatalf("read rule / default: New = %v", err)
	}
	// An entry that is itself a rule's exact name is never refused, even
	// when it folds onto another rule's name too.
	cfg = Config{
		Tools:          []ToolRule{{Name: "Sync", Class: Write}, {Name: "sync", Class: Write}},
		WriteAllowlist: []string{"Sync"},
	}
	if _, err := New(cfg); err != nil {
		t.Fatalf("exact rule name: New = %v", err)
	}
}
