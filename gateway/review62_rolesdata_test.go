package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview62RefusalRolesList: a refusal's data.roles was null for a
// caller whose token gave no roles, and [] for one given "roles": [] (62e
// helper's lead): a client reading it as a list met two shapes. It is a
// list either way.
func TestReview62RefusalRolesList(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:         []policy.ToolRule{{Name: "admin_stats", Class: policy.Read}},
		RoleRules:     []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		ShowForbidden: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, roles := range [][]string{nil, {}} {
		pr := &policy.Principal{Subject: "u", Roles: roles}
		e := (&Gateway{}).denial(pol, pr, "admin_stats", pol.Authorize(pr, "admin_stats"))
		b, err := json.Marshal(e.data)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"roles":[]`) {
			t.Errorf("roles %#v: data %s, want \"roles\":[]", roles, b)
		}
	}
}
