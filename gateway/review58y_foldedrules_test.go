package gateway

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview58yFoldedRulesThatDemandTheSame: New and SetPolicy take two
// rules whose names differ only in case when they demand the same
// (Options.Policy: "whose demands differ" are refused; examples/gateway's
// README: "refused unless they demand the same"). Roles are any-one-of
// sets and argument limits all-must-hold sets: listed in another order, or
// an empty list for none, they demand the same, yet checkFoldedRules
// compares the slices as written (reflect.DeepEqual) and refuses them.
func TestReview58yFoldedRulesThatDemandTheSame(t *testing.T) {
	zero := 0.0
	amount := policy.ArgLimit{Field: "amount", Max: 100, Min: &zero}
	count := policy.ArgLimit{Field: "count", Max: 5}
	for name, rules := range map[string][2]policy.ToolRule{
		"roles_in_another_order": {
			{Name: "refund", Class: policy.Read, Roles: []string{"finance", "admin"}},
			{Name: "Refund", Class: policy.Read, Roles: []string{"admin", "finance"}},
		},
		"arg_limits_in_another_order": {
			{Name: "refund", Class: policy.Read, ArgLimits: []policy.ArgLimit{amount, count}},
			{Name: "Refund", Class: policy.Read, ArgLimits: []policy.ArgLimit{count, amount}},
		},
		"no_arg_limits_nil_or_empty": {
			{Name: "refund", Class: policy.Read},
			{Name: "Refund", Class: policy.Read, ArgLimits: []policy.ArgLimit{}},
		},
	} {
		p, err := policy.New(policy.Config{Tools: rules[:]})
		if err != nil {
			t.Fatalf("%s: policy.New: %v", name, err)
		}
		// The policy itself decides both spellings alike.
		for _, pr := range []*policy.Principal{
			{Subject: "a", Roles: []string{"admin"}},
			{Subject: "f", Roles: []string{"finance"}},
			{Subject: "v", Roles: []string{"viewer"}},
		} {
			args := policy.MapArgs{"amount": 150.0, "count": 1.0}
			if a, b := p.Decide(pr, "refund", args), p.Decide(pr, "Refund", args); a.Code != b.Code {
				t.Fatalf("%s: %s decided %v and %v", name, pr.Subject, a.Code, b.Code)
			}
		}
		if _, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Policy: p, Logger: discardLogger()}); err != nil {
			t.Errorf("%s: New refused rules that demand the same: %v", name, err)
		}
	}
}

// TestReview58yFoldedRulesDocComment: b6c0730 put checkFoldedRules and its
// doc comment between checkLimitTools's doc comment and checkLimitTools:
// checkFoldedRules's doc begins "checkLimitTools refuses ...", and
// checkLimitTools has none.
func TestReview58yFoldedRulesDocComment(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "gateway.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil || fd.Name.Name != "checkFoldedRules" && fd.Name.Name != "checkLimitTools" {
			continue
		}
		if fd.Doc == nil || !strings.HasPrefix(fd.Doc.Text(), fd.Name.Name+" ") {
			t.Errorf("%s's doc comment does not begin with its name: %.80q", fd.Name.Name, fd.Doc.Text())
		}
	}
}
