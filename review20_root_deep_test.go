package mcpguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review20Deep is a JSON array nested depth levels deep.
func review20Deep(depth int) json.RawMessage {
	return json.RawMessage(strings.Repeat("[", depth) + strings.Repeat("]", depth))
}

// A tool's result nested a little over 1000 levels deep (in its structured
// content, with or without an output schema, a tool error's too, or in a
// _meta) passed step 11: encoding/json reads 10000 levels. go-sdk
// v1.8.0's client refuses a message nested beyond 1000 levels and closes
// its session, so the caller lost its connection, and every later call on
// it failed. A tool that passes on what a downstream sent (a fetched JSON
// document) handed a downstream the means to cut its callers off. Step 11
// now refuses a result with a part nested deeper than 512 levels as
// INVALID_RESPONSE, and the session goes on. A result nested 500 levels
// deep still passes.
func TestReview20DeepResultRefusedSessionKept(t *testing.T) {
	type shape struct {
		name   string
		schema bool
		res    func(deep json.RawMessage) *mcp.CallToolResult
	}
	shapes := []shape{
		{"structured_no_schema", false, func(d json.RawMessage) *mcp.CallToolResult {
			r := textResult("x")
			r.StructuredContent = d
			return r
		}},
		{"structured_map_no_schema", false, func(d json.RawMessage) *mcp.CallToolResult {
			r := textResult("x")
			r.StructuredContent = map[string]any{"a": d}
			return r
		}},
		{"structured_schema", true, func(d json.RawMessage) *mcp.CallToolResult {
			r := textResult("x")
			r.StructuredContent = json.RawMessage(`{"a":` + string(d) + `}`)
			return r
		}},
		{"tool_error_structured", true, func(d json.RawMessage) *mcp.CallToolResult {
			r := textResult("x")
			r.IsError = true
			r.StructuredContent = d
			return r
		}},
		{"result_meta", false, func(d json.RawMessage) *mcp.CallToolResult {
			r := textResult("x")
			r.Meta = mcp.Meta{"d": d}
			return r
		}},
		{"block_meta", false, func(d json.RawMessage) *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x", Meta: mcp.Meta{"d": d}}}}
		}},
		{"resource_meta", false, func(d json.RawMessage) *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a", Text: "x", Meta: mcp.Meta{"d": d}}}}}
		}},
	}
	for _, v := range protocolVersions {
		for _, sh := range shapes {
			for _, depth := range []int{500, 1100} {
				name := versionName(v) + "/" + sh.name + "/" + map[int]string{500: "500", 1100: "1100"}[depth]
				t.Run(name, func(t *testing.T) {
					pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "dump", Class: policy.Read}, {Name: "ok", Class: policy.Read}}})
					if err != nil {
						t.Fatal(err)
					}
					srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
					ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
					tool := &mcp.Tool{Name: "dump", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: ro}
					if sh.schema {
						tool.OutputSchema = json.RawMessage(`{"type":"object"}`)
					}
					deep := review20Deep(depth)
					srv.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return sh.res(deep), nil })
					srv.AddTool(&mcp.Tool{Name: "ok", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: ro},
						func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
							return textResult("fine"), nil
						})
					sink := &memSink{}
					g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Logger: quiet})
					if err != nil {
						t.Fatal(err)
					}
					if err := g.Install(srv); err != nil {
						t.Fatal(err)
					}
					cs := connectVersion(t, srv, nil, v)
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "dump", Arguments: map[string]any{}})
					want := ""
					if depth > 512 {
						want = "INVALID_RESPONSE"
					}
					if err != nil {
						t.Errorf("dump: %v; want %s", err, map[string]string{"": "its result", "INVALID_RESPONSE": "INVALID_RESPONSE"}[want])
					} else if want == "" {
						// The tool's own result, a tool error or not.
						if res.IsError != (sh.name == "tool_error_structured") || strings.Contains(mustJSON(res), "INVALID_RESPONSE") {
							t.Errorf("dump: %.200s; want the tool's result", mustJSON(res))
						}
					} else if got := errorCode(t, res); got != want {
						t.Errorf("dump: code %q, want %q", got, want)
					}
					if err == nil && want != "" {
						evs := sink.all()
						if out := evs[len(evs)-1]; out.Phase != audit.PhaseOutcome || out.Code != want || !strings.Contains(out.Detail, "nested") {
							t.Errorf("outcome record: phase %s code %q detail %q; want %s saying the result is nested too deeply", out.Phase, out.Code, out.Detail, want)
						}
					}
					if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ok", Arguments: map[string]any{}}); err != nil || res.IsError {
						t.Errorf("the next call on the session: %v, %s; want it answered", err, mustJSON(res))
					}
				})
			}
		}
	}
}

// The stand-alone ValidateOutput step refuses such structured content too.
func TestReview20ValidateOutputRefusesDeepResult(t *testing.T) {
	v, err := mcpguard.NewOutputValidator(json.RawMessage(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	for depth, want := range map[int]string{500: "", 600: "INVALID_RESPONSE", 5000: "INVALID_RESPONSE"} {
		h := mcpguard.ValidateOutput(v)(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"a":` + string(review20Deep(depth)) + `}`)}, nil
		})
		res, err := h(context.Background(), req("dump", `{}`))
		if got := codeOf(t, res, err); got != want {
			t.Errorf("structured content nested %d deep: code %q, want %q", depth, got, want)
		}
	}
}
