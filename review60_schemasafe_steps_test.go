package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review60StepCall runs h for a call of tool by "ada" (role staff) with
// args, through an Authenticate that knows her.
func review60StepCall(t *testing.T, h mcp.ToolHandler, tool, args string) *mcp.CallToolResult {
	t.Helper()
	authn := mcpguard.Authenticate(mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
		return &mcpguard.Identity{Principal: &policy.Principal{Subject: "ada", Roles: []string{"staff"}}}, nil
	}))
	res, err := authn(h)(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool, Arguments: json.RawMessage(args)}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestReview60StepsHonourSchemaSafeErrors: Options.SchemaSafeErrors is an
// option of the steps that take Options, as ProtocolErrors is: a Limit
// given it refuses a call past resolution with the error in its text alone
// (it does not know the tool's output schema: it leaves StructuredContent
// out for every tool), which a TypeScript SDK client (1.32) would otherwise
// check against the tool's output schema and throw -32602 over. Stand-alone
// Limit ignored the option.
func TestReview60StepsHonourSchemaSafeErrors(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "capped", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Tool: "capped", Max: 1, Window: time.Minute}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	step, err := mcpguard.Limit(lim, pol, &mcpguard.Options{SchemaSafeErrors: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	h := step(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	if res := review60StepCall(t, h, "capped", `{}`); res.IsError {
		t.Fatalf("first call refused: %+v", res)
	}
	res := review60StepCall(t, h, "capped", `{}`)
	d, ok := mcpguard.DenialOf(res, nil)
	if !ok || d.Code != mcpguard.CodeRateLimitExceeded {
		t.Fatalf("second call: %+v, want RATE_LIMIT_EXCEEDED", res)
	}
	if res.StructuredContent != nil {
		t.Errorf("the refusal carries StructuredContent %s with SchemaSafeErrors set", res.StructuredContent)
	}
}

// TestReview60SchemaSafeMiddleware: the steps that take no Options
// (Authorize, ValidateArguments, ValidateOutput, Recover) have SchemaSafe
// around them: their refusals past resolution reach the client in text
// alone, DenialOf still reads them; a refusal before resolution
// (UNAUTHENTICATED) keeps its StructuredContent, as the Guard's does, and
// a result that is no refusal passes unchanged.
func TestReview60SchemaSafeMiddleware(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:         []policy.ToolRule{{Name: "del", Class: policy.Write}, {Name: "get", Class: policy.Read}},
		ShowForbidden: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := mcpguard.NewValidator(map[string]any{
		"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}},
		"required": []any{"id"}, "additionalProperties": false,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}, StructuredContent: map[string]any{}}, nil
	}
	h := mcpguard.Chain(mcpguard.SchemaSafe(), mcpguard.Authorize(pol), mcpguard.ValidateArguments(v))(handler)
	for _, tc := range []struct {
		tool, args string
		code       mcpguard.Code
	}{
		{"del", `{"id":"1"}`, mcpguard.CodeWriteNotAllowed},
		{"get", `{"id":1}`, mcpguard.CodeInvalidArguments},
	} {
		res := review60StepCall(t, h, tc.tool, tc.args)
		d, ok := mcpguard.DenialOf(res, nil)
		if !ok || d.Code != tc.code {
			t.Errorf("%s: %+v, want %s", tc.tool, res, tc.code)
			continue
		}
		if res.StructuredContent != nil {
			t.Errorf("%s: the refusal carries StructuredContent %s", tc.tool, res.StructuredContent)
		}
	}
	if res := review60StepCall(t, h, "get", `{"id":"1"}`); res.IsError || res.StructuredContent == nil {
		t.Errorf("an allowed call's result: %+v, want its StructuredContent kept", res)
	}
	// No caller: refused before resolution, as the Guard keeps it.
	res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "get", Arguments: json.RawMessage(`{"id":"1"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := mcpguard.DenialOf(res, nil); !ok || d.Code != mcpguard.CodeUnauthenticated || res.StructuredContent == nil {
		t.Errorf("unauthenticated: %+v, want UNAUTHENTICATED with its StructuredContent", res)
	}
}
