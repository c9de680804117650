package mcpguard_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview64fStatelessSessionKeyChosen: go-sdk v1.8.0 keeps a
// compatibility setting, MCPGODEBUG=allowsessionsinstateless=1, under
// which a stateless Streamable HTTP server takes an older client's
// Mcp-Session-Id header, whatever it says, for the session's id. The
// guard keys the session scope of its limits by that id unprefixed, and a
// caller without one (a 2026-07-28 client, whose session has no id) by
// "user:"+subject. So bob, sending "Mcp-Session-Id: user:alice", spends
// alice's per-session budget: after his two calls her first call is
// refused RATE_LIMIT_EXCEEDED. The guard's limits promise caps per
// session, per user and global; one caller's calls must not use up
// another caller's session budget (the gateway prefixes its keys for that
// very reason: "a client chooses its session id freely and could
// otherwise name another caller's key"). The go-sdk reads the setting at
// start, so the check runs in a child process.
func TestReview64fStatelessSessionKeyChosen(t *testing.T) {
	runGodebugChild(t, "TestReview64fStatelessSessionKeyChild", "allowsessionsinstateless=1")
}

func TestReview64fStatelessSessionKeyChild(t *testing.T) {
	if !inGodebugChild() {
		return // run as the child of TestReview64fStatelessSessionKeyChosen only
	}
	hs := r64fStatelessServer(t, false)

	// Bob, an older client, names "user:alice" as his session.
	for i := 1; i <= 2; i++ {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, i)
		req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Mcp-Session-Id", "user:alice")
		req.Header.Set("Authorization", "Bearer bob-tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.Contains(string(b), `"isError":true`) {
			t.Fatalf("bob's call %d: %d %s", i, resp.StatusCode, b)
		}
	}

	// Alice, a 2026-07-28 client (the go-sdk's default): her first call.
	tr := &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: bearerRT{"alice-tok"}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if code := errorCode(t, res); code != "" {
		t.Fatalf("alice's first call refused %s: bob's calls spent her session budget", code)
	}
}

// r64fStatelessServer serves, over stateless Streamable HTTP (JSON
// answers), a server with the test tools and a guard installed whose
// tokens are alice-tok and bob-tok (users alice and bob) and whose one
// limit is two calls an hour per session; with bind, the handler is
// wrapped in the tokens' BindSessions, as the package documentation asks
// of stateful servers.
func r64fStatelessServer(t *testing.T, bind bool) *httptest.Server {
	t.Helper()
	tokens, err := token.New(map[string]*policy.Principal{
		"alice-tok": {Subject: "alice", Roles: []string{"user"}},
		"bob-tok":   {Subject: "bob", Roles: []string{"user"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	addTools(srv, &spy{})
	pol, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.Session, Max: 2, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, mcpguard.BearerTokens(tokens), &mcpguard.Options{
		Audit: &memSink{}, Limiter: lim, Confirmer: testSigner(t, nil), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	if bind {
		h = tokens.BindSessions(h)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs
}
