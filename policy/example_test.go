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

func ExampleParseConfig() {
	cfg, err := policy.ParseConfig([]byte(`{
	  "tools": [
	    {"name": "get_customer_record", "class": "read"},
	    {"name": "trigger_refund", "class": "write",
	     "arg_limits": [{"field": "amount", "max": 100, "exempt_roles": ["finance"]}]}
	  ],
	  "role_rules": [{"pattern": "admin_*", "roles": ["admin"]}],
	  "write_allowlist": ["trigger_refund"]
	}`))
	if err != nil {
		panic(err)
	}
	p, err := policy.New(cfg)
	if err != nil {
		panic(err)
	}
	support := &policy.Principal{Subject: "sam", Roles: []string{"support"}}
	finance := &policy.Principal{Subject: "fay", Roles: []string{"finance"}}
	for _, c := range []struct {
		pr     *policy.Principal
		amount float64
	}{{support, 50}, {support, 500}, {finance, 500}} {
		d := p.Decide(c.pr, "trigger_refund", policy.MapArgs{"amount": c.amount})
		fmt.Printf("%s refunds %v: %v\n", c.pr.Subject, c.amount, d.Allowed())
	}

	// A misspelt member is an error, not a rule silently dropped.
	_, err = policy.ParseConfig([]byte(`{"tools": [{"name": "trigger_refund", "class": "write", "rolls": ["finance"]}]}`))
	fmt.Println(err)
	// Output:
	// sam refunds 50: true
	// sam refunds 500: false
	// fay refunds 500: true
	// policy: config: tools[0].rolls: unknown member; want one of name, class, roles, cost, confirm, arg_limits
}
