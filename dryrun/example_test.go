package dryrun_test

import (
	"context"
	"fmt"
	"log"
	"regexp"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/dryrun"
)

// guard is a minimal dry-run guard as the root package wires it: the
// server's configuration ORed with the client's request, the real handler
// skipped unless it is dry-run aware.
func guard(configured, aware bool, next mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !configured && !dryrun.Requested(req.Params.Meta) {
			return next(ctx, req)
		}
		if aware {
			return next(dryrun.NewContext(ctx), req)
		}
		p := req.Params
		return dryrun.Result(p.Name, dryrun.Summary(p.Name, p.Arguments)), nil
	}
}

func connect(ctx context.Context, s *mcp.Server) *mcp.ClientSession {
	st, ct := mcp.NewInMemoryTransports()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		log.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	return cs
}

// ExampleResult shows a write tool called with dry-run on for the server:
// the ticket system is never touched and the model gets a simulated result.
func ExampleResult() {
	ctx := context.Background()
	created := 0 // the downstream ticket system
	createTicket := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		created++
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "TICKET-1"}}}, nil
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "tickets"}, nil)
	s.AddTool(&mcp.Tool{Name: "create_ticket", InputSchema: map[string]any{"type": "object"}},
		guard(true, false, createTicket))

	cs := connect(ctx, s)
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Name:      "create_ticket",
		Arguments: map[string]any{"title": "Printer on fire", "body": "3rd floor"},
	})
	if err != nil {
		log.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	fmt.Println(regexp.MustCompile(`DRYRUN-[0-9a-f]{16}`).ReplaceAllString(text, "DRYRUN-<id>"))
	fmt.Println("isError:", res.IsError, "tickets created:", created)
	// Output:
	// {"dry_run":true,"id":"DRYRUN-<id>","summary":"Would run create_ticket with arguments: body, title","tool":"create_ticket"}
	// isError: false tickets created: 0
}

// ExampleRequested shows a client asking for a preview of one call through
// the documented _meta key, and a dry-run aware handler that reads the
// context marker and leaves its downstream alone.
func ExampleRequested() {
	ctx := context.Background()
	refund := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		msg := "refunded"
		if dryrun.FromContext(ctx) {
			msg = "would refund (preview, nothing changed)"
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, nil
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "shop"}, nil)
	s.AddTool(&mcp.Tool{Name: "refund", InputSchema: map[string]any{"type": "object"}},
		guard(false, true, refund))

	cs := connect(ctx, s)
	defer cs.Close()
	for _, preview := range []bool{true, false} {
		p := &mcp.CallToolParams{Name: "refund", Arguments: map[string]any{"order": "A-1"}}
		if preview {
			p.Meta = mcp.Meta{dryrun.MetaKey: true}
		}
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	}
	// Output:
	// would refund (preview, nothing changed)
	// refunded
}
