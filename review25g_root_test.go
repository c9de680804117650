package mcpguard_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview25gFromTokenRefusedOverSSE: FromToken (and FromEnv) lend the
// launching user's identity to the one client of a stdio server, never to
// a network caller. Over the go-sdk's HTTP+SSE transport a call carries no
// headers, so every network client ran as the launching user: alice's
// token in the server's environment let anyone who reached the port call
// her tools. Such calls are refused as unauthenticated; the same
// authenticator over in-memory transports still works.
func TestReview25gFromTokenRefusedOverSSE(t *testing.T) {
	tokens, err := token.New(map[string]*policy.Principal{"alice-tok": {Subject: "alice", Roles: []string{"user"}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	down := &spy{}
	addTools(srv, down)
	pol, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, mcpguard.FromToken("alice-tok", tokens), &mcpguard.Options{
		Audit: &memSink{}, Confirmer: testSigner(t, nil), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stranger", Version: "1"}, nil).
		Connect(context.Background(), &mcp.SSEClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	res, err := call(t, cs, "echo", map[string]any{"text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if got := errorCode(t, res); got != "UNAUTHENTICATED" {
		t.Errorf("a network caller over HTTP+SSE with FromToken: %q, want UNAUTHENTICATED (it ran as the launching user)", got)
	}

	// In memory, the one client is the launching user's.
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	mem, err := mcp.NewClient(&mcp.Implementation{Name: "local", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	res, err = call(t, mem, "echo", map[string]any{"text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Errorf("in memory with FromToken: refused %q, want alice's call to run", errorCode(t, res))
	}
}
