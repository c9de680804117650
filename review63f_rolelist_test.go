package mcpguard_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/gateway"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type r63fBearer struct{ tok string }

func (b r63fBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// TestReview63fLongRoleListReadBack: token.CheckPrincipal promises that a
// principal passing it "can travel in identity headers (the gateway's
// X-Mcp-Gateway-Subject and -Role) and be read back as the same principal",
// and the gateway forwards every principal that passes it. A principal
// with many roles (a JWT's groups, an introspected scope list), each role
// valid, passes, and the gateway signs and forwards it; but
// FromGatewayHeaders, behind the documented signed assembly
// (GatewaySigner.Verify in front), refuses the joined role header once it
// is over 256 bytes: every call of that user is UNAUTHENTICATED.
func TestReview63fLongRoleListReadBack(t *testing.T) {
	roles := make([]string, 24)
	for i := range roles {
		roles[i] = fmt.Sprintf("team-payments-%02d-read", i) // 21 bytes each
	}
	pr := &policy.Principal{Subject: "ops", Roles: roles}
	if err := token.CheckPrincipal(pr); err != nil {
		t.Fatalf("CheckPrincipal refuses the principal (%v): then the gateway would not forward it", err)
	}
	tokens, err := token.New(map[string]*policy.Principal{"ops-tok": pr})
	if err != nil {
		t.Fatal(err)
	}

	srv := mcp.NewServer(&mcp.Implementation{Name: "down", Version: "1"}, nil)
	var seen *policy.Principal
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			seen = mcpguard.PrincipalFromContext(ctx)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "whoami", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	g, err := mcpguard.New(pol, mcpguard.FromGatewayHeaders(nil), &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	signer, err := token.NewGatewaySigner(bytes.Repeat([]byte{0x6f}, 32))
	if err != nil {
		t.Fatal(err)
	}
	down := httptest.NewServer(signer.Verify(mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}),
		&token.GatewayVerifyOptions{Logger: quiet}))
	defer down.Close()
	gw, err := gateway.New(down.URL, gateway.NewTokenStore(tokens), &gateway.Options{Signer: signer, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	gs := httptest.NewServer(gw)
	defer gs.Close()

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "ops", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: gs.URL + "/mcp", HTTPClient: &http.Client{Transport: r63fBearer{"ops-tok"}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || seen == nil || seen.Subject != "ops" || strings.Join(seen.Roles, ",") != strings.Join(roles, ",") {
		var text string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		t.Errorf("a principal that passes CheckPrincipal (role header %d bytes), through the signed gateway: "+
			"isError %v %q, handler saw %v; want it run as the same principal",
			len(strings.Join(roles, ",")), res.IsError, text, seen)
	}
}
