package policy_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/policy"
)

// fullConfigJSON uses every member of the rule file format.
const fullConfigJSON = `{
  "tools": [
    {"name": "get_customer_record", "class": "read"},
    {"name": "trigger_refund", "class": "write", "roles": ["support", "finance"], "cost": 2.5, "confirm": true,
     "arg_limits": [{"field": "amount", "max": 100, "exempt_roles": ["finance"]}, {"field": "delta", "max": -0.5}]}
  ],
  "role_rules": [{"pattern": "admin_*", "roles": ["admin"]}],
  "write_allowlist": ["trigger_refund"],
  "default": {"class": "read", "roles": ["viewer"], "cost": 1},
  "show_forbidden": true
}`

func TestReview17ParseConfigFull(t *testing.T) {
	got, err := policy.ParseConfig([]byte(fullConfigJSON))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	want := policy.Config{
		Tools: []policy.ToolRule{
			{Name: "get_customer_record", Class: policy.Read},
			{Name: "trigger_refund", Class: policy.Write, Roles: []string{"support", "finance"}, Cost: 2.5, Confirm: true,
				ArgLimits: []policy.ArgLimit{
					{Field: "amount", Max: 100, ExemptRoles: []string{"finance"}},
					{Field: "delta", Max: -0.5},
				}},
		},
		RoleRules:      []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		WriteAllowlist: []string{"trigger_refund"},
		Default:        &policy.ToolRule{Class: policy.Read, Roles: []string{"viewer"}, Cost: 1},
		ShowForbidden:  true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseConfig (-want +got):\n%s", diff)
	}
	if _, err := policy.New(got); err != nil {
		t.Errorf("New(ParseConfig(...)): %v", err)
	}
}

// TestReview17ParseConfigMisspeltFieldLostByUnmarshal is why ParseConfig
// exists: encoding/json straight into a Config drops a misspelt member
// silently, and the write tool is then allowed for everyone.
func TestReview17ParseConfigMisspeltFieldLostByUnmarshal(t *testing.T) {
	doc := `{"tools":[{"name":"trigger_refund","class":"write","rolls":["finance"]}],"write_allowlist":["trigger_refund"]}`
	if _, err := policy.ParseConfig([]byte(doc)); err == nil || !strings.Contains(err.Error(), "tools[0].rolls") {
		t.Errorf("ParseConfig(%s) = %v, want an error naming tools[0].rolls", doc, err)
	}
}

func TestReview17ParseConfigRefused(t *testing.T) {
	tool := func(members string) string { return `{"tools":[{"name":"t","class":"read"` + members + `}]}` }
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"unknown_tool_field", `{"tools":[{"name":"a","class":"read"},{"name":"b","class":"read"},{"name":"c","class":"read","rolls":["x"]}]}`, "tools[2].rolls: unknown member"},
		{"go_field_name_top", `{"RoleRules":[{"pattern":"admin_*","roles":["admin"]}]}`, "RoleRules: unknown member"},
		{"go_field_name_case_of_known", `{"Tools":[]}`, `Tools: unknown member; member names are lower case: "tools"`},
		{"go_field_name_tool", tool(`,"ArgLimits":[{"Field":"amount","Max":1}]`), "tools[0].ArgLimits: unknown member"},
		{"unknown_arg_limit_field", tool(`,"arg_limits":[{"field":"amount","maximum":1}]`), "tools[0].arg_limits[0].maximum: unknown member"},
		{"unknown_default_field", `{"default":{"class":"read","name":"x"}}`, "default.name: unknown member"},
		{"unknown_odd_key", `{"a b":1}`, `["a b"]: unknown member`},
		{"duplicate_key", `{"show_forbidden":true,"show_forbidden":false}`, "show_forbidden: given twice"},
		{"duplicate_key_nested", tool(`,"roles":["a"],"roles":[]`), "tools[0].roles: given twice"},
		{"duplicate_key_case", tool(`,"roles":["a"],"Roles":[]`), `tools[0].Roles: unknown member; member names are lower case: "roles"`},
		{"duplicate_key_fold", `{"show_forbidden":false,"ſhow_forbidden":true}`, "unknown member"},
		{"trailing_value", `{} {}`, "after top-level value"},
		{"trailing_garbage", `{"tools":[]}x`, "after top-level value"},
		{"empty", ``, "unexpected end"},
		{"white_space_only", " \n", "unexpected end"},
		{"not_json", `{tools:[]}`, "line 1, column 2"},
		{"syntax_error_line", "{\n  \"tools\": [,]\n}", "line 2, column 13"},
		{"bom", "\xef\xbb\xbf{}", "byte order mark"},
		{"invalid_utf8", "{\"tools\":[{\"name\":\"a\xff\",\"class\":\"read\"}]}", "not valid UTF-8"},
		{"lone_surrogate", `{"tools":[{"name":"admin\ud800","class":"read"}]}`, `tools[0].name: a \u escape of half a surrogate pair`},
		{"lone_low_surrogate", `{"write_allowlist":["a\udc00b"]}`, "write_allowlist[0]: a \\u escape of half a surrogate pair"},
		{"top_array", `[]`, "want an object, not an array"},
		{"top_null", `null`, "want an object, not null"},
		{"top_string", `"x"`, "want an object, not a string"},
		{"class_missing", `{"tools":[{"name":"t"}]}`, `tools[0]: "class" is required`},
		{"class_capital", `{"tools":[{"name":"t","class":"Read"}]}`, `tools[0].class: "Read": want "read" or "write"`},
		{"class_upper", `{"tools":[{"name":"t","class":"WRITE"}]}`, `want "read" or "write"`},
		{"class_empty", `{"tools":[{"name":"t","class":""}]}`, `want "read" or "write"`},
		{"class_number", `{"tools":[{"name":"t","class":1}]}`, "tools[0].class: want a string, not a number"},
		{"default_class_missing", `{"default":{"roles":["x"]}}`, `default: "class" is required`},
		{"name_missing", `{"tools":[{"class":"read"}]}`, `tools[0]: "name" is required`},
		{"name_empty", `{"tools":[{"name":"","class":"read"}]}`, "tools[0].name: empty"},
		{"cost_negative", tool(`,"cost":-1`), "tools[0].cost: -1: want a finite number, 0 or more"},
		{"cost_overflow", tool(`,"cost":1e400`), "tools[0].cost: 1e400: not a finite float64"},
		{"cost_string", tool(`,"cost":"5"`), "tools[0].cost: want a number, not a string"},
		{"max_overflow", tool(`,"arg_limits":[{"field":"amount","max":1e400}]`), "tools[0].arg_limits[0].max: 1e400: not a finite float64"},
		{"max_negative_overflow", tool(`,"arg_limits":[{"field":"amount","max":-1e400}]`), "not a finite float64"},
		{"max_missing", tool(`,"arg_limits":[{"field":"amount"}]`), `tools[0].arg_limits[0]: "max" is required`},
		{"field_missing", tool(`,"arg_limits":[{"max":1}]`), `tools[0].arg_limits[0]: "field" is required`},
		{"field_empty", tool(`,"arg_limits":[{"field":"","max":1}]`), "tools[0].arg_limits[0].field: empty"},
		{"confirm_string", tool(`,"confirm":"yes"`), "tools[0].confirm: want true or false, not a string"},
		{"show_forbidden_number", `{"show_forbidden":1}`, "show_forbidden: want true or false, not a number"},
		{"null_tools", `{"tools":null}`, "tools: want an array, not null"},
		{"null_roles", tool(`,"roles":null`), "tools[0].roles: want an array, not null"},
		{"null_role", tool(`,"roles":["a",null]`), "tools[0].roles[1]: want a string, not null"},
		{"null_default", `{"default":null}`, "default: want an object, not null"},
		{"null_allowlist", `{"write_allowlist":null}`, "write_allowlist: want an array, not null"},
		{"null_arg_limits", tool(`,"arg_limits":null`), "tools[0].arg_limits: want an array, not null"},
		{"null_exempt_roles", tool(`,"arg_limits":[{"field":"a","max":1,"exempt_roles":null}]`), "exempt_roles: want an array, not null"},
		{"null_cost", tool(`,"cost":null`), "tools[0].cost: want a number, not null"},
		{"null_show_forbidden", `{"show_forbidden":null}`, "show_forbidden: want true or false, not null"},
		{"tools_object", `{"tools":{"name":"t","class":"read"}}`, "tools: want an array, not an object"},
		{"tool_string", `{"tools":["t"]}`, "tools[0]: want an object, not a string"},
		{"roles_string", tool(`,"roles":"admin"`), "tools[0].roles: want an array, not a string"},
		{"role_rule_roles_missing", `{"role_rules":[{"pattern":"admin_*"}]}`, `role_rules[0]: "roles" is required`},
		{"role_rule_pattern_missing", `{"role_rules":[{"roles":["admin"]}]}`, `role_rules[0]: "pattern" is required`},
		{"role_rule_pattern_empty", `{"role_rules":[{"pattern":"","roles":["admin"]}]}`, "role_rules[0].pattern: empty"},
		{"role_rule_unknown", `{"role_rules":[{"pattern":"a*","roles":["admin"],"role":"x"}]}`, "role_rules[0].role: unknown member"},
		{"too_large", `{"tools":[]}` + strings.Repeat(" ", policy.MaxConfigBytes), "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := policy.ParseConfig([]byte(tc.doc))
			if err == nil {
				t.Fatalf("ParseConfig(%.200q) = %+v, nil; want an error with %q", tc.doc, cfg, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "policy: ") {
				t.Errorf("ParseConfig(%.200q) = %v; want an error with %q", tc.doc, err, tc.want)
			}
		})
	}
}

func TestReview17ParseConfigAccepted(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      policy.Config
	}{
		{"empty_object", `{}`, policy.Config{}},
		{"white_space_around", " \n\t{}\n", policy.Config{}},
		{"empty_lists", `{"tools":[],"role_rules":[],"write_allowlist":[]}`, policy.Config{}},
		{"escaped_member_name", `{"show_\u0066orbidden":true}`, policy.Config{ShowForbidden: true}},
		{"surrogate_pair", `{"write_allowlist":["refund_\ud83d\ude00"]}`, policy.Config{WriteAllowlist: []string{"refund_😀"}}},
		{"escaped_replacement_character", `{"write_allowlist":["a\ufffd"]}`, policy.Config{WriteAllowlist: []string{"a\ufffd"}}},
		{"max_any_finite", `{"tools":[{"name":"t","class":"read","arg_limits":[{"field":"f","max":-1.7976931348623157e308}]}]}`,
			policy.Config{Tools: []policy.ToolRule{{Name: "t", Class: policy.Read, ArgLimits: []policy.ArgLimit{{Field: "f", Max: -1.7976931348623157e308}}}}}},
		{"cost_zero_and_false", `{"default":{"class":"write","cost":0,"confirm":false},"show_forbidden":false}`,
			policy.Config{Default: &policy.ToolRule{Class: policy.Write}}},
		{"size_at_the_limit", `{}` + strings.Repeat(" ", policy.MaxConfigBytes-2), policy.Config{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := policy.ParseConfig([]byte(tc.doc))
			if err != nil {
				t.Fatalf("ParseConfig(%.100q): %v", tc.doc, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseConfig(%.100q) (-want +got):\n%s", tc.doc, diff)
			}
		})
	}
}

// TestReview17ParseConfigThenNew: what the format accepts and New refuses
// is refused by New with its usual error, naming the rule.
func TestReview17ParseConfigThenNew(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"empty_role", `{"tools":[{"name":"t","class":"read","roles":[""]}]}`, `policy: tool "t": empty role name in roles`},
		{"duplicate_tool", `{"tools":[{"name":"t","class":"read"},{"name":"t","class":"write"}]}`, `duplicate rule for tool "t"`},
		{"pattern_inner_star", `{"role_rules":[{"pattern":"a*b","roles":["x"]}]}`, `role rule "a*b": only a trailing * is supported`},
		{"role_rule_no_roles", `{"role_rules":[{"pattern":"a*","roles":[]}]}`, `role rule "a*" lists no roles`},
		{"field_path", `{"tools":[{"name":"t","class":"read","arg_limits":[{"field":"a.b","max":1}]}]}`, "not a path"},
		{"allowlist_empty_name", `{"write_allowlist":[""]}`, "empty name in write allowlist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := policy.ParseConfig([]byte(tc.doc))
			if err != nil {
				t.Fatalf("ParseConfig(%s): %v", tc.doc, err)
			}
			if _, err := policy.New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New(ParseConfig(%s)) = %v; want an error with %q", tc.doc, err, tc.want)
			}
		})
	}
}

func FuzzReview17ParseConfig(f *testing.F) {
	f.Add([]byte(fullConfigJSON))
	f.Add([]byte(`{"tools":[{"name":"a","class":"read","rolls":1}]}`))
	f.Add([]byte(`{"write_allowlist":["a\ud800"]}`))
	f.Add([]byte(`[{}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := policy.ParseConfig(data)
		if err != nil {
			return
		}
		// What it accepted is JSON whose members are all known: decoding
		// it into a map finds nothing else at the top.
		var top map[string]json.RawMessage
		if err := json.Unmarshal(data, &top); err != nil {
			t.Fatalf("ParseConfig accepted %q, which encoding/json refuses: %v", data, err)
		}
		for k := range top {
			switch k {
			case "tools", "role_rules", "write_allowlist", "default", "show_forbidden":
			default:
				t.Fatalf("ParseConfig accepted %q with the member %q", data, k)
			}
		}
		for _, r := range cfg.Tools {
			if r.Class != policy.Read && r.Class != policy.Write {
				t.Fatalf("ParseConfig accepted %q with class %v", data, r.Class)
			}
		}
	})
}
