package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/mcpguard/mcpguard/gateway"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A gateway with a policy of its own in front of a go-sdk server:
// FilterToolsList takes the admin tool out of a support user's tools/list,
// and an argument limit refuses that user a refund above 100 (an admin
// would be exempt). A refused call never reaches the downstream, and a
// call of the hidden tool is answered as one of a tool the policy does not
// know.
func ExampleOptions_policy() {
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	for _, name := range []string{"get_order", "trigger_refund", "admin_reset_key"} {
		server.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				fmt.Println("downstream: running", name, string(req.Params.Arguments))
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
	}
	down := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	defer down.Close()

	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "get_order", Class: policy.Read},
			{Name: "trigger_refund", Class: policy.Write,
				ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 100, ExemptRoles: []string{"admin"}}}},
			{Name: "admin_reset_key", Class: policy.Write},
		},
		RoleRules:      []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		WriteAllowlist: []string{"trigger_refund", "admin_reset_key"},
	})
	if err != nil {
		log.Fatal(err)
	}
	tokens, err := gateway.ParseTokens([]byte(`{"tok-sam": {"sub": "sam", "role": "support"}}`))
	if err != nil {
		log.Fatal(err)
	}
	g, err := gateway.New(down.URL, tokens, &gateway.Options{Policy: pol, FilterToolsList: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	gw := httptest.NewServer(g)
	defer gw.Close()

	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"amount":40}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"amount":400}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"admin_reset_key","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`,
	} {
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok-sam")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		var msg struct {
			Result struct{ Tools []struct{ Name string } }
			Error  map[string]any
		}
		json.NewDecoder(resp.Body).Decode(&msg)
		resp.Body.Close()
		fmt.Print(resp.StatusCode)
		for _, t := range msg.Result.Tools { // a listing, filtered for the caller
			fmt.Print(" ", t.Name)
		}
		if msg.Error != nil {
			fmt.Print(" ", msg.Error["code"], " ", msg.Error["message"])
		}
		fmt.Println()
	}
	// Output:
	// 200 get_order trigger_refund
	// downstream: running trigger_refund {"amount":40}
	// 200
	// 403 -32001 Unauthorized Tool Call: tool 'trigger_refund': argument amount exceeds the limit for this caller
	// 404 -32601 Method not found: unknown tool 'admin_reset_key'
	// 404 -32601 Method not found: unknown tool 'no_such_tool'
}
