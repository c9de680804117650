package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ExampleDenialOf reads a guard's refusals on the client's side, from what CallTool returns:
// whether to wait and retry, and how long, or to stop and ask the human.
func ExampleDenialOf() {
	ctx := context.Background()
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{
		{Name: "search", Class: policy.Read},
		{Name: "delete_all", Class: policy.Write}, // not on the write allowlist
	}})
	if err != nil {
		log.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Tool: "search", Max: 1, Window: time.Minute}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	alice := &mcpguard.Identity{Principal: &policy.Principal{Subject: "alice"}}
	authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	g, err := mcpguard.New(pol, authn, &mcpguard.Options{
		Limiter:      lim,
		NoWriteAhead: true, // this demo has no audit sink
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		log.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	for _, name := range []string{"search", "delete_all"} {
		server.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
			})
	}
	if err := g.Install(server); err != nil {
		log.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, st, nil); err != nil {
		log.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	for _, name := range []string{"search", "search", "delete_all"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		d, denied := mcpguard.DenialOf(res, err)
		switch {
		case !denied && err != nil: // not a guard's refusal: a transport failure, say
			log.Fatal(err)
		case !denied:
			fmt.Println(name, "ran")
		case d.Code.Retryable() && d.RetryAfter >= 0:
			fmt.Println(name, "refused:", d.Code, "retry after", d.RetryAfter.Round(time.Minute),
				errors.Is(d, mcpguard.ErrRateLimitExceeded), d.CorrelationID != "")
		default: // no wait helps: ask the human
			fmt.Println(name, "refused:", d)
		}
	}
	// Output:
	// search ran
	// search refused: RATE_LIMIT_EXCEEDED retry after 1m0s true true
	// delete_all refused: WRITE_NOT_ALLOWED: tool "delete_all" is a write tool and is not on the write allowlist
}
