package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func ExampleChain() {
	trace := func(name string) mcpguard.Middleware {
		return func(next mcp.ToolHandler) mcp.ToolHandler {
			return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				fmt.Println("enter", name)
				defer fmt.Println("leave", name)
				return next(ctx, req)
			}
		}
	}
	h := mcpguard.Chain(trace("a"), trace("b"), trace("c"))(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fmt.Println("handler")
		return &mcp.CallToolResult{}, nil
	})
	h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "x"}})
	// Output:
	// enter a
	// enter b
	// enter c
	// handler
	// leave c
	// leave b
	// leave a
}

// Example guards a whole server with one line and calls it as two users over
// in-memory transports.
func Example() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	type noteIn struct {
		Title string `json:"title"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "add_note", Description: "add a note"},
		func(ctx context.Context, req *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, any, error) {
			who := mcpguard.PrincipalFromContext(ctx).Subject // the real caller
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: who + " added " + in.Title}}}, nil, nil
		})
	server.AddTool(&mcp.Tool{Name: "admin_purge", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "purged"}}}, nil
		})

	pol, _ := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "add_note", Class: policy.Write},
			{Name: "admin_purge", Class: policy.Write},
		},
		RoleRules:      []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		WriteAllowlist: []string{"add_note", "admin_purge"},
	})
	// In-memory sessions carry no headers; this demo authenticator names
	// the caller by the client's name. Real servers use FromTokenInfo,
	// BearerTokens, FromEnv or FromGatewayHeaders.
	users := map[string]*policy.Principal{
		"ann": {Subject: "ann", Roles: []string{"admin"}},
		"bob": {Subject: "bob", Roles: []string{"staff"}},
	}
	authn := mcpguard.AuthenticatorFunc(func(ctx context.Context, req mcp.Request) (*mcpguard.Identity, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil && users[ip.ClientInfo.Name] != nil {
			return &mcpguard.Identity{Principal: users[ip.ClientInfo.Name]}, nil
		}
		return nil, mcpguard.Deny(mcpguard.CodeUnauthenticated, "unknown client")
	})
	g, err := mcpguard.New(pol, authn, &mcpguard.Options{
		NoWriteAhead: true, // this demo has no audit sink
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		panic(err)
	}
	if err := g.Install(server); err != nil {
		panic(err)
	}

	for _, user := range []string{"ann", "bob"} {
		ct, st := mcp.NewInMemoryTransports()
		ss, _ := server.Connect(ctx, st, nil)
		cs, _ := mcp.NewClient(&mcp.Implementation{Name: user, Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		tools, _ := cs.ListTools(ctx, nil)
		fmt.Printf("%s sees %d tools\n", user, len(tools.Tools))
		res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"title": "milk"}})
		fmt.Println(" ", res.Content[0].(*mcp.TextContent).Text)
		res, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"title": "milk", "admin": true}})
		var body struct {
			Error struct{ Code, Message string }
		}
		json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &body)
		fmt.Println(" ", body.Error.Code, body.Error.Message)
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "admin_purge", Arguments: map[string]any{}})
		fmt.Println("  admin_purge error:", err)
		cs.Close()
		ss.Close()
	}
	// Output:
	// ann sees 2 tools
	//   ann added milk
	//   INVALID_ARGUMENTS unknown argument "admin"
	//   admin_purge error: <nil>
	// bob sees 1 tools
	//   bob added milk
	//   INVALID_ARGUMENTS unknown argument "admin"
	//   admin_purge error: calling "tools/call": unknown tool "admin_purge"
}
