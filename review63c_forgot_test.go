package mcpguard_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rv63cServe installs g on a fresh server with a read and a write (raw and
// typed) and connects one client as id.
func rv63cServe(t *testing.T, cfg policy.Config, authn mcpguard.Authenticator, opts *mcpguard.Options) (*mcp.ClientSession, *rv63cRan, error) {
	t.Helper()
	r := &rv63cRan{}
	s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	rv63cAddTyped(s, r, "get_a")
	rv63cAddRaw(s, r, "set_a")
	rv63cAddTyped(s, r, "set_b")
	rv63cAddRaw(s, r, "admin_a")
	pol, err := policy.New(cfg)
	if err != nil {
		return nil, r, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	g, err := mcpguard.New(pol, authn, opts)
	if err != nil {
		return nil, r, err
	}
	if err := g.Install(s); err != nil {
		return nil, r, err
	}
	return connectVersion(t, s, nil, ""), r, nil
}

func rv63cCode(t *testing.T, cs *mcp.ClientSession, name string) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	if err == nil && !res.IsError {
		return "OK"
	}
	if d, ok := mcpguard.DenialOf(res, err); ok {
		return string(d.Code)
	}
	return "error: " + err.Error()
}

// TestReview63cForgotOptions: a server that leaves out one option at a time
// stays closed where the docs say it is.
func TestReview63cForgotOptions(t *testing.T) {
	rules := []policy.ToolRule{
		{Name: "get_a", Class: policy.Read},
		{Name: "set_a", Class: policy.Write},
		{Name: "set_b", Class: policy.Write},
		{Name: "admin_a", Class: policy.Read},
	}
	roleRules := []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}}
	tokens, err := token.Parse([]byte(`{"tok-vic": {"sub": "vic", "role": "viewer"}, "tok-ada": {"sub": "ada", "role": "Admin"}}`))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("no allowlist", func(t *testing.T) {
		cs, r, err := rv63cServe(t, policy.Config{Tools: rules, RoleRules: roleRules},
			mcpguard.FromToken("tok-vic", tokens), &mcpguard.Options{Audit: &memSink{}})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"set_a", "set_b"} {
			if c := rv63cCode(t, cs, n); c != string(mcpguard.CodeWriteNotAllowed) {
				t.Errorf("%s: %s", n, c)
			}
		}
		if got := r.all(); len(got) != 0 {
			t.Errorf("ran %v", got)
		}
	})
	t.Run("no audit sink", func(t *testing.T) {
		cs, r, err := rv63cServe(t, policy.Config{Tools: rules, RoleRules: roleRules, WriteAllowlist: []string{"set_a", "set_b"}},
			mcpguard.FromToken("tok-vic", tokens), &mcpguard.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"set_a", "set_b"} {
			if c := rv63cCode(t, cs, n); c != string(mcpguard.CodeAuditUnavailable) {
				t.Errorf("%s: %s", n, c)
			}
		}
		if c := rv63cCode(t, cs, "get_a"); c != "OK" {
			t.Errorf("get_a: %s", c)
		}
		if got := strings.Join(r.all(), ","); got != "get_a:vic" {
			t.Errorf("ran %v", got)
		}
	})
	t.Run("no identity", func(t *testing.T) {
		for _, authn := range []mcpguard.Authenticator{
			mcpguard.FromToken("", tokens),
			mcpguard.FromEnv("RV63C_UNSET_VARIABLE", tokens),
			mcpguard.BearerTokens(tokens), // in memory: no headers
			mcpguard.FromTokenInfo(nil),
			mcpguard.FromGatewayHeaders(nil),
		} {
			cs, r, err := rv63cServe(t, policy.Config{Tools: rules, RoleRules: roleRules, WriteAllowlist: []string{"set_a", "set_b"}},
				authn, &mcpguard.Options{Audit: &memSink{}})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{"get_a", "set_a", "admin_a", "nope"} {
				if c := rv63cCode(t, cs, n); c != string(mcpguard.CodeUnauthenticated) {
					t.Errorf("%T %s: %s", authn, n, c)
				}
			}
			if got := r.all(); len(got) != 0 {
				t.Errorf("ran %v", got)
			}
		}
	})
	t.Run("misspelt role", func(t *testing.T) {
		// ada's token says "Admin", the rule "admin": she is no admin.
		cs, r, err := rv63cServe(t, policy.Config{Tools: rules, RoleRules: roleRules},
			mcpguard.FromToken("tok-ada", tokens), &mcpguard.Options{Audit: &memSink{}})
		if err != nil {
			t.Fatal(err)
		}
		if c := rv63cCode(t, cs, "admin_a"); c == "OK" {
			t.Errorf("admin_a ran for the role %q", "Admin")
		}
		_ = r
		// A role rule naming a misspelt role hides the tool from everyone.
		cs, _, err = rv63cServe(t, policy.Config{Tools: rules, RoleRules: []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admn"}}}},
			mcpguard.FromToken("tok-vic", tokens), &mcpguard.Options{Audit: &memSink{}})
		if err != nil {
			t.Fatal(err)
		}
		if c := rv63cCode(t, cs, "admin_a"); c == "OK" {
			t.Errorf("admin_a ran for a viewer")
		}
	})
	t.Run("no confirmer", func(t *testing.T) {
		cr := append([]policy.ToolRule(nil), rules...)
		cr[1].Confirm = true
		_, _, err := rv63cServe(t, policy.Config{Tools: cr, WriteAllowlist: []string{"set_a"}},
			mcpguard.FromToken("tok-vic", tokens), &mcpguard.Options{Audit: &memSink{}})
		if err == nil {
			t.Error("a tool that needs confirmation served without a Confirmer")
		}
	})
	t.Run("no rules", func(t *testing.T) {
		_, _, err := rv63cServe(t, policy.Config{}, mcpguard.FromToken("tok-vic", tokens), &mcpguard.Options{Audit: &memSink{}})
		if err == nil {
			t.Error("a server whose tools have no rules was installed")
		}
	})
}

// TestReview63cSetPolicyForgets: SetPolicy refuses a policy that New or
// Install would refuse: a confirmation without a Confirmer, a served tool
// (one added after Install too) without a rule; and keeps the old one.
func TestReview63cSetPolicyForgets(t *testing.T) {
	ctx := context.Background()
	rules := []policy.ToolRule{{Name: "get_a", Class: policy.Read}, {Name: "set_a", Class: policy.Write}}
	pol, err := policy.New(policy.Config{Tools: append(rules, policy.ToolRule{Name: "late_a", Class: policy.Read})})
	if err != nil {
		t.Fatal(err)
	}
	r := &rv63cRan{}
	s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	rv63cAddRaw(s, r, "get_a")
	rv63cAddRaw(s, r, "set_a")
	authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
		return &mcpguard.Identity{Principal: &policy.Principal{Subject: "vic"}}, nil
	})
	g, err := mcpguard.New(pol, authn, &mcpguard.Options{Audit: &memSink{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(s); err != nil {
		t.Fatal(err)
	}
	cs := connectVersion(t, s, nil, "")
	rv63cAddRaw(s, r, "late_a")
	if lt, err := cs.ListTools(ctx, nil); err != nil || len(lt.Tools) != 3 {
		t.Fatalf("list: %v %v", lt, err)
	}
	cr := append([]policy.ToolRule(nil), rules...)
	cr[1].Confirm = true
	withConfirm, err := policy.New(policy.Config{Tools: append(cr, policy.ToolRule{Name: "late_a", Class: policy.Read}), WriteAllowlist: []string{"set_a"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetPolicy(withConfirm); err == nil {
		t.Error("SetPolicy took a confirmation without a Confirmer")
	}
	noLate, err := policy.New(policy.Config{Tools: rules, WriteAllowlist: []string{"set_a"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetPolicy(noLate); err == nil {
		t.Error("SetPolicy took a policy without a rule for the late tool")
	}
	if c := rv63cCode(t, cs, "set_a"); c != string(mcpguard.CodeWriteNotAllowed) {
		t.Errorf("set_a: %s", c)
	}
	if got := r.all(); len(got) != 0 {
		t.Errorf("ran %v", got)
	}
}
