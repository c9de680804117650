package mcpguard_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/internal/testlog"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
)

// review56EchoServer serves, guarded by g, a server with one read tool,
// "echo", over Streamable HTTP behind bind, and returns its URL.
func review56EchoServer(t *testing.T, g *mcpguard.Guard, bind func(http.Handler) http.Handler) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil })
	if err := g.Install(s); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(bind(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)))
	t.Cleanup(srv.Close)
	return srv.URL
}

// review56Connect opens a session (protocol 2025-11-25) at url, its
// requests carrying the bearer token tok.
func review56Connect(t *testing.T, url, tok string) *mcp.ClientSession {
	t.Helper()
	cl := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: &http.Client{Transport: bearerRT{tok}},
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestReview56WarnsOfUnboundSessions: a guard authenticating JWTs
// (Bearer(jwt)) behind the static table's BindSessions, copied from the
// README, started without a word, and every session it served was bound to
// no one (anyone knowing its id could use and end it). The guard now warns,
// once, when a caller it authenticates uses a session over HTTP without a
// verified user; not behind the right binding, nor for a token it refuses
// (TestReview56xInitializeNotAuthenticated: at no extra authentication).
func TestReview56WarnsOfUnboundSessions(t *testing.T) {
	v, signClaims := review56IdP(t)
	sign := func(sub string) string {
		return signClaims(jwt.MapClaims{"aud": "mcp", "sub": sub, "exp": time.Now().Add(time.Hour).Unix()})
	}
	table, err := token.New(map[string]*policy.Principal{"tok-dev": {Subject: "dev"}})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "echo", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		bind  func(http.Handler) http.Handler
		tok   string
		warns bool
	}{
		{"jwt_behind_table_binding", table.BindSessions, sign("ann"), true},
		{"jwt_unbound", func(h http.Handler) http.Handler { return h }, sign("ann"), true},
		{"jwt_behind_its_binding", func(h http.Handler) http.Handler { return token.BindSessions(v.Verifier(), h) }, sign("ann"), false},
		{"refused_token", table.BindSessions, "not-a-token", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs testlog.Buffer
			g, err := mcpguard.New(pol, mcpguard.Bearer(v), &mcpguard.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			url := review56EchoServer(t, g, c.bind)
			for range 2 {
				cs := review56Connect(t, url, c.tok)
				_, _ = cs.ListTools(context.Background(), nil) // refused for a refused token
				_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}})
				cs.Close()
			}
			n := strings.Count(logs.String(), "bound to no one")
			if want := map[bool]int{true: 1, false: 0}[c.warns]; n != want {
				t.Errorf("%d warnings of an unbound session, want %d; logs:\n%s", n, want, logs.String())
			}
		})
	}
}
