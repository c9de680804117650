package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
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

// ExampleLimit composes stand-alone steps into a chain of one's own, around
// one raw handler on a real server: the caller from a fixed token, a policy,
// and a rate limit of two calls per user. The third call is refused.
func ExampleLimit() {
	ctx := context.Background()
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "echo", Class: policy.Read}}})
	if err != nil {
		log.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 2, Window: time.Hour}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	limit, err := mcpguard.Limit(lim, pol, nil)
	if err != nil {
		log.Fatal(err)
	}
	alice := &mcpguard.Identity{Principal: &policy.Principal{Subject: "alice"}}
	chain := mcpguard.Chain(
		mcpguard.Recover(nil),
		mcpguard.Authenticate(mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })),
		mcpguard.Authorize(pol),
		limit,
	)
	server := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		chain(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello, " + mcpguard.PrincipalFromContext(ctx).Subject}}}, nil
		}))
	ct, st := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, st, nil); err != nil {
		log.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	for range 3 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}})
		if err != nil {
			log.Fatal(err)
		}
		if res.IsError { // {"error":{"code":...}}, for the model to read
			var body struct{ Error struct{ Code string } }
			b, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(b, &body)
			fmt.Println("refused:", body.Error.Code)
			continue
		}
		fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	}
	// Output:
	// hello, alice
	// hello, alice
	// refused: RATE_LIMIT_EXCEEDED
}

// ExampleWriteAhead composes a chain of the stand-alone steps for a write
// tool: its audit trail gets a durable intent before the handler runs and
// the outcome after, under one correlation id, and an answer that does not
// fit the tool's output schema never reaches the model.
func ExampleWriteAhead() {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "refund", Class: policy.Write}},
		WriteAllowlist: []string{"refund"}, // writes are off unless allowlisted
	})
	if err != nil {
		log.Fatal(err)
	}
	trail := audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
		line := fmt.Sprint("audit: ", e.Phase, " ", e.Subject, " ", e.Tool, " allowed=", e.Allowed)
		if e.Code != "" {
			line += " code=" + e.Code
		}
		fmt.Println(line)
		return nil
	})
	opts := &mcpguard.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	auditStep, err := mcpguard.Audit(trail, opts)
	if err != nil {
		log.Fatal(err)
	}
	writeAhead, err := mcpguard.WriteAhead(trail, pol, opts)
	if err != nil {
		log.Fatal(err)
	}
	out, err := mcpguard.NewOutputValidator(json.RawMessage(`{"type":"object","properties":{"refund_id":{"type":"string"}},"required":["refund_id"]}`))
	if err != nil {
		log.Fatal(err)
	}
	alice := &mcpguard.Identity{Principal: &policy.Principal{Subject: "alice"}}
	handler := mcpguard.Chain(
		mcpguard.Recover(opts.Logger),
		auditStep,
		mcpguard.Authenticate(mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })),
		mcpguard.Authorize(pol),
		writeAhead,
		mcpguard.ValidateOutput(out),
	)(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fmt.Println("handler: refunding")
		return &mcp.CallToolResult{StructuredContent: map[string]any{"refund_id": 42}}, nil // a number: malformed
	})
	res, _ := handler(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "refund", Arguments: json.RawMessage(`{}`)}})
	var body struct {
		Error struct{ Code, Message string }
	}
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &body)
	fmt.Println("answer:", body.Error.Code+":", body.Error.Message)
	// Output:
	// audit: intent alice refund allowed=true
	// handler: refunding
	// audit: outcome alice refund allowed=false code=INVALID_RESPONSE
	// answer: INVALID_RESPONSE: the tool returned a malformed result; the write may have been made: check before repeating it
}
