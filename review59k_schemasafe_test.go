package mcpguard_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type r59kIn struct {
	ID string `json:"id"`
}

type r59kOut struct {
	Text string `json:"text"`
}

// TestReview59kSchemaSafeAllRefusals: with Options.SchemaSafeErrors every
// refusal the Guard gives for a typed tool after resolution (a cap, a
// declined confirmation, a panic, an oversized result) carries no
// structuredContent, which the TypeScript SDK's client would check against
// the output schema and throw -32602 over.
func TestReview59kSchemaSafeAllRefusals(t *testing.T) {
	ctx := context.Background()
	tokens, err := token.Parse([]byte(`{"tok-ada": {"sub": "ada", "role": "staff"}}`))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "capped", Class: policy.Read},
			{Name: "boom", Class: policy.Read},
			{Name: "big", Class: policy.Read},
			{Name: "del", Class: policy.Write, Confirm: true},
		},
		WriteAllowlist: []string{"del"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.Session,
		Tool: "capped", Max: 1, Window: time.Minute}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := confirm.NewSigner([]confirm.Key{{ID: "k", Secret: make([]byte, 32)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	read := &mcp.ToolAnnotations{ReadOnlyHint: true}
	ok := func(context.Context, *mcp.CallToolRequest, r59kIn) (*mcp.CallToolResult, r59kOut, error) {
		return nil, r59kOut{Text: "x"}, nil
	}
	mcp.AddTool(server, &mcp.Tool{Name: "capped", Annotations: read}, ok)
	mcp.AddTool(server, &mcp.Tool{Name: "del", Annotations: &mcp.ToolAnnotations{}}, ok)
	mcp.AddTool(server, &mcp.Tool{Name: "boom", Annotations: read},
		func(context.Context, *mcp.CallToolRequest, r59kIn) (*mcp.CallToolResult, r59kOut, error) {
			panic("boom")
		})
	mcp.AddTool(server, &mcp.Tool{Name: "big", Annotations: read},
		func(context.Context, *mcp.CallToolRequest, r59kIn) (*mcp.CallToolResult, r59kOut, error) {
			return nil, r59kOut{Text: strings.Repeat("a", 4096)}, nil
		})
	g, err := mcpguard.New(pol, mcpguard.FromToken("tok-ada", tokens), &mcpguard.Options{
		NoWriteAhead: true, Logger: slog.New(slog.DiscardHandler), SchemaSafeErrors: true,
		Limiter: lim, Confirmer: signer, MaxOutputBytes: 1024,
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
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "capped", Arguments: map[string]any{"id": "1"}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ tool, code string }{
		{"capped", "RATE_LIMIT_EXCEEDED"},
		{"del", "CONFIRMATION_REQUIRED"},
		{"boom", "INTERNAL"},
		{"big", "INVALID_RESPONSE"},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{"id": "1"}})
		if err != nil {
			t.Errorf("%s: %v", tc.tool, err)
			continue
		}
		d, _ := mcpguard.DenialOf(res, nil)
		if !res.IsError || d == nil || string(d.Code) != tc.code {
			t.Errorf("%s: got %s, want %s", tc.tool, mustJSON(res), tc.code)
			continue
		}
		if res.StructuredContent != nil {
			t.Errorf("%s: %s refusal has structuredContent %s; a TypeScript client throws -32602",
				tc.tool, tc.code, mustJSON(res.StructuredContent))
		}
	}
}
