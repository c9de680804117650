package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview62ePinMCPOnHandshakeEraProtocol pins the seed's HTTP
// guarantees on /mcp for a client on protocol 2025-11-25 (the
// initialize handshake, the session in Mcp-Session-Id), which every /mcp
// test left to the go-sdk client's default, 2026-07-28: per-user results
// (auth passthrough), the write refused by default, the MCP session as
// the limiter's session (the sixth call refused, another caller's session
// untouched), the session's records under its id, and the session bound
// to the user who opened it.
func TestReview62ePinMCPOnHandshakeEraProtocol(t *testing.T) {
	ta := newTestApp(t, nil)
	base := startHTTP(t, ta)
	connect := func(tok string) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "review62e", Version: "v1"}, nil).Connect(t.Context(),
			&mcp.StreamableClientTransport{Endpoint: base + "/mcp",
				HTTPClient: &http.Client{Transport: bearer{tok, http.DefaultTransport}}},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		if got := cs.InitializeResult().ProtocolVersion; got != "2025-11-25" {
			t.Fatalf("negotiated %q, want 2025-11-25", got)
		}
		return cs
	}
	alice, bob := connect("token-alice"), connect("token-bob")
	if alice.ID() == "" || alice.ID() == bob.ID() {
		t.Fatalf("session ids %q, %q", alice.ID(), bob.ID())
	}
	search := &mcp.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": ""}}
	text := func(res *mcp.CallToolResult) string { return res.Content[0].(*mcp.TextContent).Text }

	res, err := bob.CallTool(t.Context(), search)
	if toolCode(t, res, err) != "" || !strings.Contains(text(res), "sales-001") || strings.Contains(text(res), "eng-001") {
		t.Fatalf("bob's search: %v", res.StructuredContent)
	}
	res, err = alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "create_ticket", Arguments: ticketArgs()})
	if c := toolCode(t, res, err); c != "WRITE_NOT_ALLOWED" {
		t.Errorf("create_ticket: %q, want WRITE_NOT_ALLOWED", c)
	}
	for i := 1; i <= 5; i++ {
		res, err := alice.CallTool(t.Context(), search)
		if c := toolCode(t, res, err); c != "" || !strings.Contains(text(res), "eng-001") {
			t.Fatalf("alice's call %d: %q %v", i, c, res.StructuredContent)
		}
	}
	res, err = alice.CallTool(t.Context(), search)
	if c := toolCode(t, res, err); c != "RATE_LIMIT_EXCEEDED" {
		t.Errorf("alice's sixth call in her session: %q, want RATE_LIMIT_EXCEEDED", c)
	}
	res, err = bob.CallTool(t.Context(), search)
	if c := toolCode(t, res, err); c != "" {
		t.Errorf("bob after alice's burst: %q", c)
	}
	evs := ta.events(t, audit.Filter{SessionID: alice.ID(), Phase: audit.PhaseOutcome})
	if len(evs) != 7 || evs[0].Subject != "alice" || evs[6].Code != "RATE_LIMIT_EXCEEDED" {
		t.Errorf("alice's session in the audit trail: %+v", rows(evs))
	}

	// bob's token on alice's session: 403, nothing run, nothing recorded.
	body := `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"search_docs","arguments":{"query":""}}}`
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer token-bob")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", alice.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("bob on alice's session: HTTP %d, want 403", resp.StatusCode)
	}
	if n := len(ta.events(t, audit.Filter{SessionID: alice.ID(), Phase: audit.PhaseOutcome})); n != 7 {
		t.Errorf("alice's session has %d records after bob's request, want 7", n)
	}
}
