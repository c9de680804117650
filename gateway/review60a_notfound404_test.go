package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/gateway"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview60aHiddenToolKeepsSession: on a stateful session (protocol
// 2025-11-25, the request carrying Mcp-Session-Id), the gateway answers a
// call to a tool the policy hides from the caller with -32601 and HTTP 404.
// The Streamable HTTP transport of the MCP specification (2025-03-26 to
// 2025-11-25, "Session Management") gives 404 on a request carrying a
// session id one meaning: the session has been terminated, and the client
// MUST start a new one. mark3labs/mcp-go v1.2.1 does so, for every POST:
// client/transport/streamable_http.go:881-889 (sendHTTP: "universal handling
// for session terminated": on 404 it calls c.endSession(sentSession) and
// returns ErrSessionTerminated, without reading the body), and from then on
// sendHTTP:809-811 refuses every request but initialize with
// "session terminated (404). need to re-initialize". So an mcp-go agent
// that calls a tool it cannot see (a name guessed or remembered, or one
// hidden by Gateway.SetPolicy after it listed it) loses its whole session
// (its other calls, its GET stream, its per-session state downstream), and
// reads neither the refusal's code nor its message nor its correlation id.
// The session is alive: the same session's next call goes through. The
// refusal must not be a 404 on a request that names a session.
func TestReview60aHiddenToolKeepsSession(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "down", Version: "1"}, nil)
	for _, name := range []string{"get_ticket", "admin_stats"} {
		server.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
			})
	}
	down := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{JSONResponse: true}))
	defer down.Close()

	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "get_ticket", Class: policy.Read},
			{Name: "admin_stats", Class: policy.Read},
		},
		RoleRules: []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		// ShowForbidden off: admin_stats is hidden from a viewer.
	})
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := gateway.ParseTokens([]byte(`{"tok-vera":{"sub":"vera","role":"viewer"}}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(down.URL, tokens, &gateway.Options{Policy: pol, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	defer gw.Close()

	// What mcp-go's StreamableHTTP transport sends (sendHTTP,
	// streamable_http.go:826-841): Content-Type, Accept, Mcp-Session-Id once
	// it has one, Mcp-Protocol-Version once negotiated.
	post := func(session, body string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer tok-vera")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	resp, body := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
		`"capabilities":{},"clientInfo":{"name":"mcp-go","version":"1.2.1"}}}`)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d %q, session %q", resp.StatusCode, body, session)
	}
	if resp, body := post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode/100 != 2 {
		t.Fatalf("initialized: %d %q", resp.StatusCode, body)
	}

	resp, body = post(session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"admin_stats","arguments":{}}}`)
	hiddenStatus := resp.StatusCode
	if !strings.Contains(body, `"code":-32601`) {
		t.Fatalf("hidden tool: want the gateway's -32601 refusal, got %d %q", resp.StatusCode, body)
	}

	// The session is alive: the next call on it goes through.
	resp, body = post(session, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_ticket","arguments":{}}}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"ran"`) {
		t.Fatalf("the session's next call: %d %q", resp.StatusCode, body)
	}

	if hiddenStatus == http.StatusNotFound {
		t.Errorf("a call to a hidden tool on a live session was answered HTTP 404, which the MCP transport " +
			"reserves for a terminated session: mcp-go ends its session on it (and reads no error)")
	}
}
