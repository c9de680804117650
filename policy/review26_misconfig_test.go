package policy

import (
	"strings"
	"testing"
)

// TestReview26AllowlistAllowsNothing: a write allowlist entry that names
// no tool rule while there is no default rule (a typo: "add_nte" for
// add_note), or that has no rule of its own while the default rule is
// Read, allows nothing: no call by that name is admitted, or Authorize
// never consults the allowlist for it. New refuses it, naming the entry.
// An entry naming a read tool's own rule changes nothing and is accepted
// (tests list one tool for either class).
func TestReview26AllowlistAllowsNothing(t *testing.T) {
	tools := []ToolRule{{Name: "get_order", Class: Read}, {Name: "add_note", Class: Write}}
	tests := []struct {
		name    string
		def     *ToolRule
		entries []string
		want    string // in the error; "" means accepted
	}{
		{"typo_no_default", nil, []string{"add_note", "add_nte"}, `"add_nte" names no tool rule`},
		{"read_tool_folded_no_default", nil, []string{"Get_Order"}, `"Get_Order" has no rule`},
		{"default_read", &ToolRule{Class: Read}, []string{"create_x"}, `"create_x" has no rule of its own`},
		{"read_tool_folded_default_read", &ToolRule{Class: Read}, []string{"Get_Order"}, `"Get_Order" has no rule of its own`},
		// Accepted: what the allowlist decides.
		{"write_tool", nil, []string{"add_note"}, ""},
		{"read_tool", nil, []string{"add_note", "get_order"}, ""},
		{"default_write", &ToolRule{Class: Write}, []string{"create_x", "Get_Order"}, ""},
		{"star", nil, []string{"*", "add_nte", "get_order"}, ""},
		{"folded_write_both_listed", nil, []string{"Add_Note", "add_note"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Config{Tools: tools, Default: tt.def, WriteAllowlist: tt.entries})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("New(allowlist %q) = %v, want nil", tt.entries, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("New(allowlist %q) = %v, want an error with %s", tt.entries, err, tt.want)
			}
		})
	}
}
