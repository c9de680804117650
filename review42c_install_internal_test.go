package mcpguard

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool is refused when installed, with the first of these it fails:
// the policy's rule for it (none, or a class its ReadOnlyHint contradicts),
// a name no audit record could hold, no input schema, a definition its
// callers' clients could not read, arguments bound to HTTP headers on a
// tool the policy hides from some caller, and a schema that does not
// compile. A tool that passes is not checked again under the same policy.
func TestReview42cToolChecks(t *testing.T) {
	g, _ := review41cGuard(t)
	obj := json.RawMessage(`{"type":"object"}`)
	header := json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"}}}`)
	long := strings.Repeat("a", maxRecordedName)
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	for _, tc := range []struct {
		name string
		cfg  policy.Config
		tool *mcp.Tool
		want string // "" for installed; up to a final "..." when it has one
	}{
		{"fine", policy.Config{Tools: []policy.ToolRule{{Name: "a", Class: policy.Read}}},
			&mcp.Tool{Name: "a", InputSchema: obj}, ""},
		{"no_rule", policy.Config{Tools: []policy.ToolRule{{Name: "b", Class: policy.Read}}},
			&mcp.Tool{Name: "a", InputSchema: obj}, `mcpguard: policy: tool "a" has no rule`},
		{"hint_contradicts_rule", policy.Config{Tools: []policy.ToolRule{{Name: "a", Class: policy.Write}}},
			&mcp.Tool{Name: "a", InputSchema: obj, Annotations: readOnly},
			`mcpguard: policy: tool "a" is a write in the policy but annotated ReadOnlyHint: true; drop the hint, or make the tool a read in the policy`},
		{"name_at_limit", policy.Config{Default: &policy.ToolRule{Class: policy.Read}},
			&mcp.Tool{Name: long, InputSchema: obj}, ""},
		{"name_over_limit", policy.Config{Default: &policy.ToolRule{Class: policy.Read}},
			&mcp.Tool{Name: long + "a", InputSchema: obj},
			`mcpguard: tool "` + strings.Repeat("a", 64) + `"...: its name has 1025 bytes, over 1024: the audit records of its calls could not name it`},
		{"name_unnameable", policy.Config{Default: &policy.ToolRule{Class: policy.Read}},
			&mcp.Tool{Name: "a ", InputSchema: obj},
			`mcpguard: tool refused: policy: the name "a " has white space at an end: no rule could name it, and the audit records of its calls could not`},
		{"no_input_schema", policy.Config{Tools: []policy.ToolRule{{Name: "a", Class: policy.Read}}},
			&mcp.Tool{Name: "a"}, `mcpguard: tool "a" has no input schema`},
		{"unlistable", policy.Config{Tools: []policy.ToolRule{{Name: "a", Class: policy.Read}}},
			&mcp.Tool{Name: "a", InputSchema: obj, Meta: mcp.Meta{"k": math.NaN()}},
			`mcpguard: tool "a" cannot be listed: the tool does not marshal`},
		{"binds_visible", policy.Config{Tools: []policy.ToolRule{{Name: "a", Class: policy.Read}}},
			&mcp.Tool{Name: "a", InputSchema: header}, ""},
		{"binds_hidden", policy.Config{Tools: []policy.ToolRule{{Name: "a", Class: policy.Read, Roles: []string{"admin"}}}},
			&mcp.Tool{Name: "a", InputSchema: header},
			`mcpguard: tool "a" binds arguments to HTTP headers (x-mcp-header) and the policy hides it from some callers: ` +
				"the go-sdk checks those headers against the tool before any middleware, so its answer would tell the tool from an unknown one; " +
				"make the tool visible to every caller or drop the annotation"},
		{"binds_forbidden_shown", policy.Config{Tools: []policy.ToolRule{{Name: "a", Class: policy.Read, Roles: []string{"admin"}}}, ShowForbidden: true},
			&mcp.Tool{Name: "a", InputSchema: header}, ""},
		{"hidden_not_binding", policy.Config{Tools: []policy.ToolRule{{Name: "a", Class: policy.Read, Roles: []string{"admin"}}}},
			&mcp.Tool{Name: "a", InputSchema: obj}, ""},
		{"input_schema_broken", policy.Config{Tools: []policy.ToolRule{{Name: "a", Class: policy.Read}}},
			&mcp.Tool{Name: "a", InputSchema: json.RawMessage(`{"type":"object","minLength":"x"}`)}, `mcpguard: tool "a" input schema: mcpguard: compiling schema: ...`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := policy.New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			e := g.build(tc.tool)
			for round := range 2 { // the second under the same policy
				got := ""
				if err := e.check(p); err != nil {
					got = err.Error()
				}
				if want, ok := strings.CutSuffix(tc.want, "..."); ok && strings.HasPrefix(got, want) {
					got = tc.want // the rest is the schema compiler's
				}
				if got != tc.want {
					t.Fatalf("check (round %d) = %q, want %q", round, got, tc.want)
				}
			}
		})
	}
}
