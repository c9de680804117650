package mcpguard_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type r59gIn struct {
	ID string `json:"id"`
}

type r59gOut struct {
	TicketID string `json:"ticket_id"`
}

// TestReview59gRefusalFitsOutputSchema: the official TypeScript SDK's
// client (@modelcontextprotocol/sdk 1.32) checks every structuredContent
// of a tools/call result against the tool's outputSchema from tools/list,
// isError or not (the spec: "If an output schema is provided: Servers MUST
// provide structured results that conform to this schema"), and throws
// McpError -32602 "Structured content does not match the tool's output
// schema" in place of the result. A go-sdk typed tool's own error results
// carry no structuredContent, so they reach a TypeScript agent; the guard's
// refusals of the same tool, and its dry-run preview that does not fit the
// output schema (the README: "a tool error (isError, for the model to
// read)"), carry {"error":{...}} or the preview as structuredContent, which
// a typed tool's output schema never admits: the TypeScript agent (and its
// model) never sees the code, the message, retryable or the correlation id.
// Every tool of examples/ticket and examples/shop is typed, so every
// refusal there is lost so. This asserts what such a client needs: a
// tool-error result of a tool with an output schema carries either no
// structuredContent or one the schema accepts.
func TestReview59gRefusalFitsOutputSchema(t *testing.T) {
	ctx := context.Background()
	tokens, err := token.Parse([]byte(`{"tok-ada": {"sub": "ada", "role": "staff"}}`))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "get_ticket", Class: policy.Read},
			{Name: "close_ticket", Class: policy.Write}, // not on the allowlist
			{Name: "open_ticket", Class: policy.Write},
		},
		WriteAllowlist: []string{"open_ticket"},
	})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "tickets", Version: "1"}, nil)
	handler := func(context.Context, *mcp.CallToolRequest, r59gIn) (*mcp.CallToolResult, r59gOut, error) {
		return nil, r59gOut{TicketID: "T-1"}, nil
	}
	read := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(server, &mcp.Tool{Name: "get_ticket", Annotations: read}, handler)
	mcp.AddTool(server, &mcp.Tool{Name: "close_ticket", Annotations: &mcp.ToolAnnotations{}}, handler)
	mcp.AddTool(server, &mcp.Tool{Name: "open_ticket", Annotations: &mcp.ToolAnnotations{}}, handler)
	g, err := mcpguard.New(pol, mcpguard.FromToken("tok-ada", tokens), &mcpguard.Options{
		NoWriteAhead: true, Logger: slog.New(slog.DiscardHandler), SchemaSafeErrors: true,
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
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	// The output schemas as the client lists them (the TypeScript client
	// compiles its validators from this listing).
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Resolved{}
	for _, tool := range lt.Tools {
		raw, err := json.Marshal(tool.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		schemas[tool.Name] = r
	}

	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		meta       mcp.Meta
	}{
		{"write_not_allowed", "close_ticket", map[string]any{"id": "T-1"}, nil},
		{"invalid_arguments", "get_ticket", map[string]any{"id": "T-1", "extra": true}, nil},
		{"dry_run_preview", "open_ticket", map[string]any{"id": "T-1"}, mcp.Meta{dryrun.MetaKey: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args, Meta: tc.meta})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError {
				t.Fatalf("want a tool error, got %s", mustJSON(res))
			}
			if res.StructuredContent == nil {
				// The TypeScript client passes the result on; the error
				// is read from its text.
				if tc.meta == nil {
					if d, ok := mcpguard.DenialOf(res, nil); !ok || d.Code == "" || d.CorrelationID == "" {
						t.Errorf("DenialOf of %s: %+v %v, want the refusal", mustJSON(res), d, ok)
					}
				}
				return
			}
			raw, err := json.Marshal(res.StructuredContent)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			if err := schemas[tc.tool].Validate(v); err != nil {
				t.Errorf("structuredContent %s does not fit the output schema of %s, so the "+
					"TypeScript SDK's callTool throws -32602 instead of returning this result: %v",
					raw, tc.tool, err)
			}
		})
	}
}
