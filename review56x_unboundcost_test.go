package mcpguard_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
)

// Behind the right binding, an initialize carrying a token the binding
// refused (anyone can send one) costs the guard's authenticator nothing:
// the Authenticator doc names the requests it is asked about, and
// initialize is none of them.
func TestReview56xInitializeNotAuthenticated(t *testing.T) {
	table, err := token.New(map[string]*policy.Principal{"tok-dev": {Subject: "dev"}})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "echo", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	inner := mcpguard.BearerTokens(table)
	counting := mcpguard.AuthenticatorFunc(func(ctx context.Context, req mcp.Request) (*mcpguard.Identity, error) {
		calls.Add(1)
		return inner.Authenticate(ctx, req)
	})
	g, err := mcpguard.New(pol, counting, nil)
	if err != nil {
		t.Fatal(err)
	}
	url := review56EchoServer(t, g, table.BindSessions)
	for range 5 {
		cs := review56Connect(t, url, "not-a-token")
		cs.Close()
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("5 initializes with a refused token: the authenticator was asked %d times, want 0", n)
	}
}
