package token_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds an Authorization header to every request.
type bearer struct {
	tok string
	rt  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.tok != "" {
		r.Header.Set("Authorization", "Bearer "+b.tok)
	}
	return b.rt.RoundTrip(r)
}

// TestBindSessions checks that BindSessions binds each Streamable HTTP
// session to the principal that opened it: bob, with his own valid token,
// can neither call in alice's session nor end it, and a request without a
// token cannot use it either, while alice works on. A call without a token
// outside any session still reaches the guard, which refuses it. Without
// BindSessions, bob's call in alice's session goes through (the hole).
func TestBindSessions(t *testing.T) {
	table, err := token.New(map[string]*policy.Principal{
		"alice-token": {Subject: "alice", Roles: []string{"user"}},
		"bob-token":   {Subject: "bob", Roles: []string{"user"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "whoami", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: mcpguard.PrincipalFromContext(ctx).Subject}}}, nil
		})
	g, err := mcpguard.New(pol, mcpguard.BearerTokens(table), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(s); err != nil {
		t.Fatal(err)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)

	for _, bind := range []bool{true, false} {
		var handler http.Handler = h
		if bind {
			handler = table.BindSessions(h)
		}
		srv := httptest.NewServer(handler)
		connect := func(tok string) *mcp.ClientSession {
			t.Helper()
			c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
			cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
				Endpoint: srv.URL, HTTPClient: &http.Client{Transport: bearer{tok, http.DefaultTransport}},
			}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			return cs
		}
		alice := connect("alice-token")
		sid := alice.ID()
		if sid == "" {
			t.Fatal("no session id: the test needs a stateful session")
		}
		// A raw tools/call in alice's session, as tok.
		callIn := func(tok string) (int, string) {
			body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
			req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			if tok != "" {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var sb strings.Builder
			buf := make([]byte, 4096)
			for {
				n, err := resp.Body.Read(buf)
				sb.Write(buf[:n])
				if err != nil {
					break
				}
			}
			return resp.StatusCode, sb.String()
		}
		if !bind {
			if status, out := callIn("bob-token"); status != http.StatusOK || !strings.Contains(out, "bob") {
				t.Errorf("without BindSessions the hole is not there to close: bob in alice's session got %d %s", status, out)
			}
			alice.Close()
			srv.Close()
			continue
		}
		for _, tok := range []string{"bob-token", ""} {
			if status, out := callIn(tok); status != http.StatusForbidden {
				t.Errorf("token %q in alice's session: %d %s, want 403", tok, status, out)
			}
		}
		// An unknown token (alice's, revoked) is told to get a new one.
		if status, out := callIn("no-such-token"); status != http.StatusUnauthorized {
			t.Errorf("token %q in alice's session: %d %s, want 401", "no-such-token", status, out)
		}
		req, _ := http.NewRequest(http.MethodDelete, srv.URL, nil)
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Authorization", "Bearer bob-token")
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("bob's DELETE of alice's session: %v %v, want 403", resp.StatusCode, err)
		}
		res, err := alice.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
		if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "alice" {
			t.Errorf("alice in her own session after bob's attempts: %v %+v", err, res)
		}
		// No token, no session: the guard refuses the call itself.
		anon := connect("")
		res, err = anon.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
		if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "UNAUTHENTICATED") {
			t.Errorf("a call without a token: %v %+v, want the guard's UNAUTHENTICATED", err, res)
		}
		anon.Close()
		alice.Close()
		srv.Close()
	}
}
