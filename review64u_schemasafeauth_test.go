package mcpguard_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview64uSchemaSafeAuthenticatorRefusal: SchemaSafe leaves
// StructuredContent out "as [Options].SchemaSafeErrors does for a [Guard]",
// keeping it for a refusal before resolution, "as a Guard's refusal before
// resolution does: the caller may not know the tool" (SchemaSafeErrors: "so
// that nothing tells which names have an output schema"). An Authenticator
// may refuse with UPSTREAM_UNAVAILABLE or a cap's code (see Authenticate):
// a Guard with SchemaSafeErrors keeps StructuredContent in those refusals
// (made before resolution), but SchemaSafe strips it, so that an
// unauthenticated caller tells the tools SchemaSafe is put around (those
// with an output schema, as its doc advises) from the others.
func TestReview64uSchemaSafeAuthenticatorRefusal(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "look", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, code := range []mcpguard.Code{mcpguard.CodeUpstreamUnavailable, mcpguard.CodeRateLimitExceeded} {
		t.Run(string(code), func(t *testing.T) {
			authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
				d := mcpguard.Deny(code, "the identity provider is unavailable")
				d.RetryAfter = time.Second
				return nil, d
			})
			handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				t.Error("the handler ran")
				return &mcp.CallToolResult{StructuredContent: map[string]any{"id": "1"}}, nil
			}
			tool := &mcp.Tool{Name: "look", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: rv64uOutSchema}

			gsrv := mcp.NewServer(&mcp.Implementation{Name: "g", Version: "1"}, nil)
			gsrv.AddTool(tool, handler)
			g, err := mcpguard.New(pol, authn, &mcpguard.Options{Audit: &memSink{}, Logger: log, SchemaSafeErrors: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Install(gsrv); err != nil {
				t.Fatal(err)
			}
			gres, err := rv64uConnect(t, gsrv).CallTool(context.Background(), &mcp.CallToolParams{Name: "look", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			if d, ok := mcpguard.DenialOf(gres, nil); !ok || d.Code != code {
				t.Fatalf("Guard: %+v, want %s", gres, code)
			}

			csrv := mcp.NewServer(&mcp.Implementation{Name: "c", Version: "1"}, nil)
			csrv.AddTool(tool, mcpguard.Chain(mcpguard.SchemaSafe(), mcpguard.Recover(log),
				mcpguard.Authenticate(authn), mcpguard.Authorize(pol))(handler))
			cres, err := rv64uConnect(t, csrv).CallTool(context.Background(), &mcp.CallToolParams{Name: "look", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			if d, ok := mcpguard.DenialOf(cres, nil); !ok || d.Code != code {
				t.Fatalf("chain: %+v, want %s", cres, code)
			}
			if (gres.StructuredContent == nil) != (cres.StructuredContent == nil) {
				t.Errorf("the authenticator's %s refusal (before resolution): Guard with SchemaSafeErrors "+
					"StructuredContent %v, SchemaSafe chain %v", code, gres.StructuredContent != nil, cres.StructuredContent != nil)
			}
		})
	}
}
