package mcpguard

import (
	"context"
	"log/slog"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// annGuard returns a Guard whose policy has the read tools named, whose
// every caller is the user ann, and which logs nothing.
func annGuard(t *testing.T, tools ...string) *Guard {
	t.Helper()
	var rules []policy.ToolRule
	for _, name := range tools {
		rules = append(rules, policy.ToolRule{Name: name, Class: policy.Read})
	}
	pol, err := policy.New(policy.Config{Tools: rules})
	if err != nil {
		t.Fatal(err)
	}
	auth := AuthenticatorFunc(func(context.Context, mcp.Request) (*Identity, error) {
		return &Identity{Principal: &policy.Principal{Subject: "ann"}}, nil
	})
	g, err := New(pol, auth, &Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return g
}
