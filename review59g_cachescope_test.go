package mcpguard_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview59gCallerOnlyListsArePrivate: under Install the server's
// prompts and resources are "served to authenticated callers only, as
// their own" (package doc), and the guard marks tools/list, resources/list
// and resources/read CacheScope "private". prompts/list and
// resources/templates/list kept the go-sdk's default, "public", which the
// caching utility (2026-07-28) defines as "does not contain user-specific
// data: any client or intermediary MAY cache the response and serve it
// across authorization contexts": a shared cache may then hand the listing
// the guard refuses without a token (UNAUTHENTICATED, -32000) to anyone.
// The go-sdk sends the field on every protocol version.
func TestReview59gCallerOnlyListsArePrivate(t *testing.T) {
	ctx := context.Background()
	tokens, err := token.Parse([]byte(`{"tok-ada": {"sub": "ada", "role": "staff"}}`))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "noop", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	server.AddPrompt(&mcp.Prompt{Name: "incident_summary"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	server.AddResourceTemplate(&mcp.ResourceTemplate{Name: "ticket", URITemplate: "tickets://{id}"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
	g, err := mcpguard.New(pol, mcpguard.FromToken("tok-ada", tokens), &mcpguard.Options{
		NoWriteAhead: true, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(server); err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	lp, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lp.Prompts) != 1 || lp.CacheScope != "private" {
		t.Errorf("prompts/list: %d prompts, cacheScope %q; want 1, \"private\"", len(lp.Prompts), lp.CacheScope)
	}
	lt, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lt.ResourceTemplates) != 1 || lt.CacheScope != "private" {
		t.Errorf("resources/templates/list: %d templates, cacheScope %q; want 1, \"private\"",
			len(lt.ResourceTemplates), lt.CacheScope)
	}
}
