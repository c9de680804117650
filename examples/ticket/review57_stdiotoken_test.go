package main

import (
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview57StdioWarnsOfATokenThatIsNoCaller: serve-stdio whose
// TICKET_MCP_TOKEN resolves to no caller refuses every call; the start
// warned of it on stderr only when the variable was unset, not when it held
// a token the table does not know (a typo, a blank around it), the likelier
// mistake: the operator saw a server start as if all were well.
func TestReview57StdioWarnsOfATokenThatIsNoCaller(t *testing.T) {
	for _, tc := range []struct{ name, tok string }{
		{"unset", ""},
		{"unknown", "token-mallory"},
		{"blank around", " token-alice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, stderr := connectStdio(t, tc.tok, t.TempDir(), nil)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": ""}})
			if code := toolCode(t, res, err); code != "UNAUTHENTICATED" {
				t.Fatalf("search_docs: %q, want UNAUTHENTICATED", code)
			}
			cs.Close()
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(stderr.String(), "level=WARN") && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if !strings.Contains(stderr.String(), "level=WARN") || !strings.Contains(stderr.String(), tokenEnv) ||
				!strings.Contains(stderr.String(), "every call will be refused") {
				t.Errorf("no start warning that every call will be refused; stderr:\n%s", stderr)
			}
			if tc.tok != "" && strings.Contains(stderr.String(), tc.tok) {
				t.Errorf("the warning shows the token; stderr:\n%s", stderr)
			}
		})
	}
}
