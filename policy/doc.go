// Package policy makes mcpguard's authorization decisions. It is pure: no I/O,
// no clocks, no globals. Everything it knows is data handed to [New].
//
// A [Policy] answers three questions about a [Principal] and a tool name:
//
//   - [Policy.Resolve]: is there a rule for this tool at all, and what is it
//     (class read or write, cost, whether it needs confirmation)?
//   - [Policy.Visible]: may this principal see the tool? Hidden tools must be
//     indistinguishable from unknown ones.
//   - [Policy.Decide]: may this principal call the tool with these arguments?
//     The answer is a [Decision] with a machine-readable [Code].
//
// Rules are data. A [ToolRule] names one tool; a [RoleRule] requires roles for
// every tool matching a pattern, such as "admin_*" for the role "admin". Every
// role rule that matches a tool applies (they are ANDed), and within one rule
// any listed role suffices. Rules match names under Unicode case folding
// as well as exactly ("ADMIN_reset_key" needs "admin" too, and so does
// "admın_reset_key", with a dotless i; see [Policy.Resolve]), so that a
// server matching names leniently is never offered a protected tool under
// another spelling, and a name that folds onto a tool rule's gets the
// default rule's demands as well; the write allowlist is exact, and such a
// name of a write tool runs only when it and the tool rule's name are both
// on it. Write tools are refused unless they are on the write allowlist:
// writes are off by default. [New] refuses a configuration with a
// recognisable mistake (see its list) rather than build a policy that
// silently does other than its author meant.
//
// [Policy.CheckTool] is the registration check: a tool with no rule, or whose
// configured class contradicts its ReadOnlyHint annotation, is a start-up
// error.
//
// # Rule files
//
// [ParseConfig] reads a [Config] from JSON, for rules kept as data (a
// gateway's --policy file). Member names are the Config's fields in
// snake_case:
//
//	{
//	  "tools": [
//	    {"name": "get_customer_record", "class": "read"},
//	    {"name": "trigger_refund", "class": "write", "roles": ["support", "finance"],
//	     "cost": 1, "confirm": false,
//	     "arg_limits": [{"field": "amount", "min": 0, "max": 100, "exempt_roles": ["finance"]}]}
//	  ],
//	  "role_rules": [{"pattern": "admin_*", "roles": ["admin"]}],
//	  "write_allowlist": ["trigger_refund"],
//	  "default": {"class": "read"},
//	  "show_forbidden": false
//	}
//
// Every member may be left out but a tool's "name" and "class", the
// default rule's "class", a role rule's "pattern" and "roles", and an
// argument limit's "field" and one of "min" and "max"; one left out is
// the zero value of its field (no default rule, ShowForbidden false, no
// writes allowed), but a limit without "max" has no upper bound, and one
// without "min" no lower bound: "max": 100 alone lets an amount of -5
// through. "class" is "read" or "write", exactly. The default rule has no
// "name". "min" and "max" are inclusive and may be any finite numbers;
// [ArgLimit].Max holds the float64 nearest to "max", and a call's number
// is compared with the shortest decimal that reads as that float64
// ("max": 99.99 allows 99.99 and refuses 99.990000000000001; "max":
// 100.000000000000001 is 100), and a "max" that decimal is above is
// refused, as the limit would allow more than written (9007199254740995
// reads as 9007199254740996); so is a "min" that decimal is below
// (9007199254740993 reads as 9007199254740992, and 1e-400 as 0); "cost"
// is 0 or more, and not so small that it reads as 0 (1e-400). The format is
// strict (see ParseConfig): a misspelt or unknown member, one given
// twice, a null, or a value of the wrong type is an error naming its
// place ("tools[2].rolls"), never silently dropped. ParseConfig checks
// the format; [New] then checks the rules, as for a Config built in Go.
package policy
