package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/mcpguard/mcpguard/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A gateway in front of a go-sdk server: the viewer's admin call is refused
// by the gateway, the admin's reaches the server.
func Example() {
	server := mcp.NewServer(&mcp.Implementation{Name: "keys", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "admin_reset_key"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		KeyID string `json:"key_id"`
	}) (*mcp.CallToolResult, map[string]string, error) {
		fmt.Println("downstream: resetting", in.KeyID)
		return nil, map[string]string{"status": "key_reset"}, nil
	})
	down := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	defer down.Close()

	tokens, err := gateway.ParseTokens([]byte(`{"tok-alice":{"sub":"alice","role":"admin"},"tok-bob":"viewer"}`))
	if err != nil {
		panic(err)
	}
	g, err := gateway.New(down.URL, tokens, &gateway.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	gw := httptest.NewServer(g)
	defer gw.Close()

	for _, token := range []string{"tok-bob", "tok-alice"} {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"admin_reset_key","arguments":{"key_id":"KEY-PRIMARY"}}}`
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var msg struct {
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		json.Unmarshal(out, &msg)
		if msg.Error != nil {
			fmt.Println(resp.StatusCode, msg.Error.Code, msg.Error.Message)
		} else {
			fmt.Println(resp.StatusCode, "ok")
		}
	}
	// Output:
	// 403 -32001 Unauthorized Tool Call: tool 'admin_reset_key' requires role admin, caller has role 'viewer'.
	// downstream: resetting KEY-PRIMARY
	// 200 ok
}

// Token tables come from MCP_GATEWAY_TOKENS in one of several shapes.
func ExampleParseTokens() {
	tokens, err := gateway.ParseTokens([]byte(`{
		"tok-a": "viewer",
		"tok-b": ["support", "billing"],
		"tok-c": {"sub": "svc-etl", "role": "admin"},
		"tok-d": {"sub": "carol", "roles": ["support", "admin"]}
	}`))
	if err != nil {
		panic(err)
	}
	for _, tok := range []string{"tok-b", "tok-c", "tok-d", "nope"} {
		pr, err := tokens.Authenticate(context.Background(), tok)
		if err != nil {
			fmt.Println(tok, "->", err)
			continue
		}
		fmt.Println(tok, "->", pr.Subject[:min(len(pr.Subject), 7)], pr.Roles)
	}
	// Output:
	// tok-b -> token-e [support billing]
	// tok-c -> svc-etl [admin]
	// tok-d -> carol [support admin]
	// nope -> gateway: unknown token
}
