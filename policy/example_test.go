package policy_test

import (
	"fmt"

	"github.com/mcpguard/mcpguard/policy"
)

func Example() {
	p, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "get_customer_record", Class: policy.Read},
			{Name: "trigger_refund", Class: policy.Write, ArgLimits: []policy.ArgLimit{
				{Field: "amount", Max: 100, ExemptRoles: []string{"finance"}},
			}},
			{Name: "admin_reset_key", Class: policy.Write},
		},
		// One row of data: every admin_* tool needs the admin role.
		RoleRules:      []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		WriteAllowlist: []string{"trigger_refund"},
	})
	if err != nil {
		panic(err)
	}
	viewer := &policy.Principal{Subject: "bob", Roles: []string{"viewer"}}
	admin := &policy.Principal{Subject: "alice", Roles: []string{"admin"}}

	show := func(pr *policy.Principal, tool string, args policy.Args) {
		d := p.Decide(pr, tool, args)
		code := d.Code.String()
		if d.Allowed() {
			code = "allowed"
		}
		fmt.Printf("%-5s %-19s %s\n", pr.Subject, tool, code)
	}
	show(viewer, "get_customer_record", nil)
	show(viewer, "admin_reset_key", nil) // hidden: looks unknown
	show(admin, "admin_reset_key", nil)  // not on the write allowlist
	show(viewer, "trigger_refund", policy.MapArgs{"amount": 50.0})
	show(viewer, "trigger_refund", policy.MapArgs{"amount": 500.0})
	// Output:
	// bob   get_customer_record allowed
	// bob   admin_reset_key     TOOL_NOT_FOUND
	// alice admin_reset_key     WRITE_NOT_ALLOWED
	// bob   trigger_refund      allowed
	// bob   trigger_refund      FORBIDDEN
}
