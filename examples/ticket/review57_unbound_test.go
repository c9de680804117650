package main

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview57RESTCallIsNoUnboundSession: a REST call runs on an in-memory
// MCP session that only the REST adapter reaches, for the caller it has
// authenticated. The guard took it for a Streamable HTTP session bound to
// no one, and serve-http's first REST call logged a WARN telling the
// operator that anyone who learns the session's id can use it and to wrap
// /mcp with token.BindSessions, which it is: a false alarm that also used
// up the guard's one warning.
func TestReview57RESTCallIsNoUnboundSession(t *testing.T) {
	logs := &syncBuffer{}
	a, err := newApp(appOptions{ConfigName: "server.yaml", Config: testConfig(t, nil), AuditDir: t.TempDir(),
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Error(err)
		}
	})
	base := startHTTP(t, &testApp{app: a})

	for _, tok := range []string{"token-alice", "token-bob"} {
		if r := restPost(t, base, "search_docs", tok, "s1", `{"arguments":{"query":""}}`); r.status != http.StatusOK {
			t.Fatalf("REST search_docs as %s: %d %v", tok, r.status, r.body)
		}
	}
	// /mcp, bound by token.Table.BindSessions, is no unbound session either.
	cs := connectHTTP(t, base, "token-alice")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": ""}})
	if code := toolCode(t, res, err); code != "" {
		t.Fatalf("MCP search_docs: %s", code)
	}
	if strings.Contains(logs.String(), "bound to no one") {
		t.Errorf("serve-http warns of an unbound session while every session is bound:\n%s", logs.String())
	}
}
