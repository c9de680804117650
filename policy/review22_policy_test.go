package policy_test

import (
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview22FoldedNameNeedsToolOnAllowlist: a name that equals a write
// tool rule's name only under folding is that tool at a downstream that
// matches names leniently. The write allowlist is exact, so the tool's own
// spelling must be on it too: an allowlist entry that is another spelling
// of a tool left off the allowlist (a default-governed "Delete_User" next
// to the rule for "delete_user") must not open that tool under the other
// spelling. A read tool rule needs no allowlist entry, folded or not. Since
// the twenty-fifth session New refuses such an allowlist (an entry that
// allows nothing): those cases want New's error.
func TestReview22FoldedNameNeedsToolOnAllowlist(t *testing.T) {
	admin := &policy.Principal{Subject: "a", Roles: []string{"admin"}}
	tools := []policy.ToolRule{
		{Name: "delete_user", Class: policy.Write, Roles: []string{"admin"}},
		{Name: "status", Class: policy.Read},
	}
	for _, tc := range []struct {
		name      string
		def       policy.Class
		allowlist []string
		tool      string
		want      policy.Code // or refused: New refuses the configuration
	}{
		{"default_write_variant_listed_tool_not", policy.Write, []string{"Delete_User"}, "Delete_User", refused},
		{"default_read_variant_listed_tool_not", policy.Read, []string{"DELETE_USER"}, "DELETE_USER", refused},
		{"default_read_ignorable_variant_listed", policy.Read, []string{"delete_user\u034f"}, "delete_user\u034f", refused},
		{"tool_itself_not_listed", policy.Write, []string{"Delete_User"}, "delete_user", refused},
		{"both_listed", policy.Write, []string{"Delete_User", "delete_user"}, "Delete_User", policy.Allowed},
		{"only_tool_listed", policy.Write, []string{"delete_user"}, "Delete_User", policy.WriteNotAllowed},
		{"every_write_allowed", policy.Write, []string{"*"}, "Delete_User", policy.Allowed},
		{"read_tool_variant_listed", policy.Write, []string{"STATUS"}, "STATUS", policy.Allowed},
		{"read_tool_variant_default_read", policy.Read, nil, "STATUS", policy.Allowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := policy.New(policy.Config{Tools: tools, Default: &policy.ToolRule{Class: tc.def}, WriteAllowlist: tc.allowlist})
			if tc.want == refused {
				if err == nil {
					t.Fatalf("New with allowlist %q: no error, want one (the entry allows nothing)", tc.allowlist)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := p.Authorize(admin, tc.tool); d.Code != tc.want {
				t.Errorf("Authorize(admin, %+q) with allowlist %q = %s (%s), want %s", tc.tool, tc.allowlist, code(d.Code), d.Reason, code(tc.want))
			}
			if d := p.Decide(admin, tc.tool, nil); d.Code != tc.want {
				t.Errorf("Decide(admin, %+q, nil) with allowlist %q = %s, want %s", tc.tool, tc.allowlist, code(d.Code), code(tc.want))
			}
		})
	}
}

// refused, as a wanted Code, says New must refuse the configuration.
const refused policy.Code = 255

// code names c, Allowed included.
func code(c policy.Code) string {
	if c == policy.Allowed {
		return "allowed"
	}
	return c.String()
}
