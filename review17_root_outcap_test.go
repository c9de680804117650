package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bigOutput is 5 MiB and a little of JSON: a string of that length.
var bigOutput = `{"data":"` + strings.Repeat("a", 5<<20) + `"}`

// A tool's result is capped (Options.MaxOutputBytes, 4 MiB by default):
// over it, the result is refused as INVALID_RESPONSE, as a malformed one
// is, before its structured content is checked against the output schema
// (whose cost grows with its size: 16 MB took about 1.2 s), and recorded
// so. The structured content and the content blocks are capped each on
// their own: a typed tool's result carries its structured content twice.
func TestReview17OutputCapped(t *testing.T) {
	outSchema := json.RawMessage(`{"type":"object","properties":{"data":{"type":"string"}}}`)
	for _, tc := range []struct {
		name   string
		max    int
		schema json.RawMessage
		write  bool
		res    func() *mcp.CallToolResult
		want   string // "" for the result passed on
	}{
		{"structured_default_cap", 0, outSchema, false, func() *mcp.CallToolResult {
			return &mcp.CallToolResult{StructuredContent: json.RawMessage(bigOutput)}
		}, "INVALID_RESPONSE"},
		{"structured_no_schema", 0, nil, false, func() *mcp.CallToolResult {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"data": strings.Repeat("a", 5<<20)}}
		}, "INVALID_RESPONSE"},
		{"text_default_cap", 0, nil, false, func() *mcp.CallToolResult {
			return textResult(strings.Repeat("a", 5<<20))
		}, "INVALID_RESPONSE"},
		{"image_data", 0, nil, false, func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: make([]byte, 5<<20), MIMEType: "image/png"}}}
		}, "INVALID_RESPONSE"},
		{"embedded_resource", 0, nil, false, func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a", Text: strings.Repeat("a", 5<<20)}}}}
		}, "INVALID_RESPONSE"},
		{"tool_error", 0, nil, false, func() *mcp.CallToolResult {
			r := textResult(strings.Repeat("a", 5<<20))
			r.IsError = true
			return r
		}, "INVALID_RESPONSE"},
		{"write_may_have_written", 0, nil, true, func() *mcp.CallToolResult {
			return textResult(strings.Repeat("a", 5<<20))
		}, "INVALID_RESPONSE"},
		{"each_part_under", 0, outSchema, false, func() *mcp.CallToolResult {
			s := `{"data":"` + strings.Repeat("a", 3<<20) + `"}`
			return &mcp.CallToolResult{StructuredContent: json.RawMessage(s), Content: []mcp.Content{&mcp.TextContent{Text: s}}}
		}, ""},
		{"own_cap_over", 1000, nil, false, func() *mcp.CallToolResult {
			return textResult(strings.Repeat("a", 1001))
		}, "INVALID_RESPONSE"},
		{"own_cap_at", 1000, nil, false, func() *mcp.CallToolResult {
			return textResult(strings.Repeat("a", 1000))
		}, ""},
		// Nil blocks, which this table once passed as counting nothing,
		// are refused since (TestReview25NilContentBlockRefused): the
		// go-sdk panics encoding a nil pointer in a result's content.
		{"no_cap", -1, outSchema, false, func() *mcp.CallToolResult {
			return &mcp.CallToolResult{StructuredContent: json.RawMessage(bigOutput)}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			class, hint := policy.Read, true
			if tc.write {
				class, hint = policy.Write, false
			}
			pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "dump", Class: class}}, WriteAllowlist: []string{"dump"}})
			if err != nil {
				t.Fatal(err)
			}
			sink := &memSink{}
			g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, MaxOutputBytes: tc.max, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			tool := &mcp.Tool{Name: "dump", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: hint}}
			if tc.schema != nil {
				tool.OutputSchema = tc.schema
			}
			h, err := g.Wrap(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return tc.res(), nil })
			if err != nil {
				t.Fatal(err)
			}
			res, err := h(context.Background(), req("dump", `{}`))
			if err != nil {
				t.Fatal(err)
			}
			if got := codeOf(t, res, nil); got != tc.want {
				t.Fatalf("code %q, want %q", got, tc.want)
			}
			evs := sink.all()
			out := evs[len(evs)-1]
			if out.Phase != audit.PhaseOutcome || out.Code != tc.want {
				t.Errorf("outcome record %+v, want code %q", out, tc.want)
			}
			if tc.want == "" {
				return
			}
			if !strings.Contains(out.Detail, "bytes") {
				t.Errorf("outcome record's detail %q does not say the result was too large", out.Detail)
			}
			// The guard's refusal: an error that unwraps to it (the
			// guard marks its own, see handlerError).
			var de *mcpguard.DenialError
			errors.As(res.GetError(), &de)
			if de == nil || (tc.write != strings.Contains(de.Message, "may have been made")) || len(mustJSON(res)) > 4096 {
				t.Errorf("refusal %s, want a short one that says the write may have been made only for a write", mustJSON(res))
			}
		})
	}
}

// A typed tool's oversize result is refused too, end to end.
func TestReview17TypedOutputCapped(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "dump", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	type out struct {
		Data string `json:"data"`
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "dump", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, out, error) {
			return nil, out{Data: strings.Repeat("a", 2000)}, nil
		})
	sink := &memSink{}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, MaxOutputBytes: 1500, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	res, err := call(t, connectPlain(t, srv, nil), "dump", map[string]any{})
	if err != nil || errorCode(t, res) != "INVALID_RESPONSE" {
		t.Fatalf("typed tool's 2000-byte result under a 1500-byte cap: %.300s, %v; want INVALID_RESPONSE", mustJSON(res), err)
	}
	if evs := sink.all(); len(evs) != 1 || evs[0].Code != "INVALID_RESPONSE" {
		t.Errorf("records %+v, want one outcome, INVALID_RESPONSE", evs)
	}
}
