package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ExampleGuard_Install guards every tool of a server. A stdio server runs as
// the user whose token launched it ([mcpguard.FromEnv], or
// [mcpguard.FromToken] for a token from elsewhere), so each user here gets
// a server and a Guard of their own, over in-memory transports. The viewer
// does not see the admin tool, and calling it gets the go-sdk's own
// unknown-tool error, as for a tool that does not exist; the write, off the
// allowlist, is refused for both.
func ExampleGuard_Install() {
	ctx := context.Background()
	tokens, err := token.Parse([]byte(`{"tok-vera": {"sub": "vera", "role": "viewer"}, "tok-ada": {"sub": "ada", "role": "admin"}}`))
	if err != nil {
		log.Fatal(err)
	}
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "get_ticket", Class: policy.Read},
			{Name: "close_ticket", Class: policy.Write}, // not on the WriteAllowlist
			{Name: "admin_stats", Class: policy.Read},
		},
		RoleRules: []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, tok := range []string{"tok-vera", "tok-ada"} {
		server := mcp.NewServer(&mcp.Implementation{Name: "tickets", Version: "1"}, nil)
		for _, name := range []string{"get_ticket", "close_ticket", "admin_stats"} {
			server.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					who := mcpguard.PrincipalFromContext(ctx).Subject // the real caller
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran as " + who}}}, nil
				})
		}
		g, err := mcpguard.New(pol, mcpguard.FromToken(tok, tokens), &mcpguard.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			log.Fatal(err)
		}
		if err := g.Install(server); err != nil { // after adding the tools, before serving
			log.Fatal(err)
		}
		ct, st := mcp.NewInMemoryTransports()
		server.Connect(ctx, st, nil)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Print(tok, " lists")
		for t, err := range cs.Tools(ctx, nil) { // tools/list, filtered for the caller
			if err != nil {
				log.Fatal(err)
			}
			fmt.Print(" ", t.Name)
		}
		fmt.Println()
		for _, name := range []string{"get_ticket", "close_ticket", "admin_stats", "no_such_tool"} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
			switch {
			case err != nil: // a JSON-RPC error: the tool is unknown to this caller
				fmt.Printf("  %s: error: %v\n", name, err)
			case res.IsError: // a refusal, {"error":{"code":...}} for the model to read
				var body struct{ Error struct{ Code string } }
				json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &body)
				fmt.Printf("  %s: refused %s\n", name, body.Error.Code)
			default:
				fmt.Printf("  %s: %s\n", name, res.Content[0].(*mcp.TextContent).Text)
			}
		}
		cs.Close()
	}
	// Output:
	// tok-vera lists close_ticket get_ticket
	//   get_ticket: ran as vera
	//   close_ticket: refused WRITE_NOT_ALLOWED
	//   admin_stats: error: calling "tools/call": unknown tool "admin_stats"
	//   no_such_tool: error: calling "tools/call": unknown tool "no_such_tool"
	// tok-ada lists admin_stats close_ticket get_ticket
	//   get_ticket: ran as ada
	//   close_ticket: refused WRITE_NOT_ALLOWED
	//   admin_stats: ran as ada
	//   no_such_tool: error: calling "tools/call": unknown tool "no_such_tool"
}

// ExampleGuard_SetPolicy revokes a write while the server serves: the
// same call that ran under the first policy is refused under the second,
// on the same session.
func ExampleGuard_SetPolicy() {
	ctx := context.Background()
	rules := []policy.ToolRule{{Name: "send_invoice", Class: policy.Write}}
	before, err := policy.New(policy.Config{Tools: rules, WriteAllowlist: []string{"send_invoice"}})
	if err != nil {
		log.Fatal(err)
	}
	after, err := policy.New(policy.Config{Tools: rules}) // the write taken off the allowlist
	if err != nil {
		log.Fatal(err)
	}
	tokens, err := token.Parse([]byte(`{"tok-ann": "billing"}`))
	if err != nil {
		log.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "billing", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "send_invoice", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "invoice sent"}}}, nil
		})
	g, err := mcpguard.New(before, mcpguard.FromToken("tok-ann", tokens), &mcpguard.Options{
		NoWriteAhead: true, // this example keeps no audit trail
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := g.Install(server); err != nil {
		log.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, st, nil); err != nil {
		log.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	call := func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_invoice", Arguments: map[string]any{}})
		if err != nil {
			log.Fatal(err)
		}
		if res.IsError { // {"error":{"code","message",...}}, for the model to read
			var body struct {
				Error struct{ Code, Message string }
			}
			json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &body)
			fmt.Println("refused:", body.Error.Code, body.Error.Message)
			return
		}
		fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	}
	call()
	if err := g.SetPolicy(after); err != nil {
		log.Fatal(err)
	}
	call()
	// Output:
	// invoice sent
	// refused: WRITE_NOT_ALLOWED tool "send_invoice" is a write tool and is not on the write allowlist
}

// ExampleGuard_AddTool guards one raw tool on a server no guard is
// installed on. Its arguments are validated strictly against its input
// schema before the handler runs: no coercion of "42" to an integer, and no
// field the schema does not declare, though it does not say
// "additionalProperties": false. (A typed tool, added with mcp.AddTool,
// is guarded by [mcpguard.Guard.Install].)
func ExampleGuard_AddTool() {
	ctx := context.Background()
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "get_order", Class: policy.Read}}})
	if err != nil {
		log.Fatal(err)
	}
	tokens, err := token.Parse([]byte(`{"tok-sam": {"sub": "sam", "role": "support"}}`))
	if err != nil {
		log.Fatal(err)
	}
	g, err := mcpguard.New(pol, mcpguard.FromToken("tok-sam", tokens), &mcpguard.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "orders", Version: "1"}, nil)
	tool := &mcp.Tool{
		Name:        "get_order",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"integer","minimum":1}},"required":["order_id"]}`),
	}
	err = g.AddTool(server, tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			OrderID int `json:"order_id"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		text := fmt.Sprintf("order %d for %s: shipped", in.OrderID, mcpguard.PrincipalFromContext(ctx).Subject)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, st, nil); err != nil {
		log.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	for _, args := range []map[string]any{{"order_id": 42}, {"order_id": "42"}, {"order_id": 42, "admin": true}} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_order", Arguments: args})
		if err != nil {
			log.Fatal(err)
		}
		if res.IsError { // {"error":{"code","message",...}}, for the model to read
			var body struct {
				Error struct{ Code, Message string }
			}
			json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &body)
			fmt.Println("refused:", body.Error.Code, body.Error.Message)
			continue
		}
		fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	}
	// Output:
	// order 42 for sam: shipped
	// refused: INVALID_ARGUMENTS argument "order_id" must be integer
	// refused: INVALID_ARGUMENTS unknown argument "admin"
}

// ExampleOptions_dryRun previews a write: a client asks for a dry run of
// one call with the [dryrun.MetaKey] _meta key (Options.DryRun would make
// every write one). The handler does not run; the caller gets a summary of
// what the call would do, from ToolOptions.Describe, with a synthetic
// DRYRUN- id. The same call without the key runs. (The preview of a tool
// with an output schema it does not fit, a typed tool's usually, comes as a
// tool error, isError, which clients do not check against the schema: a
// client tells it by its "dry_run": true. A handler its ToolOptions declare
// DryRunAware answers a dry run itself, in the tool's own shape.)
func ExampleOptions_dryRun() {
	ctx := context.Background()
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "close_ticket", Class: policy.Write}},
		WriteAllowlist: []string{"close_ticket"},
	})
	if err != nil {
		log.Fatal(err)
	}
	tokens, err := token.Parse([]byte(`{"tok-ann": "support"}`))
	if err != nil {
		log.Fatal(err)
	}
	g, err := mcpguard.New(pol, mcpguard.FromToken("tok-ann", tokens), &mcpguard.Options{
		Tools: map[string]mcpguard.ToolOptions{"close_ticket": {
			Describe: func(tool string, args map[string]any) string { return fmt.Sprintf("close ticket %v", args["id"]) },
		}},
		NoWriteAhead: true, // this example keeps no audit trail
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "tickets", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "close_ticket", InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Println("handler: closing the ticket")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "closed"}}}, nil
		})
	if err := g.Install(server); err != nil {
		log.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, st, nil); err != nil {
		log.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	for _, meta := range []mcp.Meta{{dryrun.MetaKey: true}, nil} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: "close_ticket", Arguments: map[string]any{"id": 7}})
		if err != nil {
			log.Fatal(err)
		}
		var preview struct {
			DryRun  bool   `json:"dry_run"`
			ID      string `json:"id"`
			Summary string `json:"summary"`
		}
		if json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &preview) == nil && preview.DryRun {
			fmt.Printf("preview: %s (id %.7s…)\n", preview.Summary, preview.ID)
			continue
		}
		fmt.Println("result:", res.Content[0].(*mcp.TextContent).Text)
	}
	// Output:
	// preview: close ticket 7 (id DRYRUN-…)
	// handler: closing the ticket
	// result: closed
}
