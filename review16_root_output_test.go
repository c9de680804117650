package mcpguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var labelOut = json.RawMessage(`{"type":"object","properties":{"label":{"type":"string"}},"required":["label"],"additionalProperties":false}`)

// TestReview16OutputNotUTF8: structured content that a tool hands over as
// bytes (json.RawMessage) reaches the wire as it is, while the guard
// checks what encoding/json decodes of it (each invalid byte U+FFFD). JSON
// text must be UTF-8 (RFC 8259); a client that decodes it another way
// (an overlong C0 A2 read as a quote) reads other data than the guard
// checked: here an extra field the output schema forbids. Such content is
// INVALID_RESPONSE, whether from a raw or a typed tool's handler, and the
// answer on the wire is UTF-8. Content the go-sdk encodes from Go strings
// is UTF-8 already (encoding/json writes U+FFFD) and passes.
func TestReview16OutputNotUTF8(t *testing.T) {
	smuggled := "{\"label\":\"ok\xc0\xa2,\xc0\xa2admin\xc0\xa2:true,\xc0\xa2x\xc0\xa2:\xc0\xa2\"}"
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	add := func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "raw_bytes", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: labelOut, Annotations: ro},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{StructuredContent: json.RawMessage(smuggled)}, nil
			})
		s.AddTool(&mcp.Tool{Name: "go_string", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: labelOut, Annotations: ro},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{StructuredContent: map[string]any{"label": "a\xffb"}}, nil
			})
	}
	cfg := policy.Config{Tools: []policy.ToolRule{{Name: "raw_bytes", Class: policy.Read}, {Name: "go_string", Class: policy.Read}}}
	for _, v := range r16Versions {
		t.Run(v, func(t *testing.T) {
			s := newR16Server(t, v, add, cfg, nil)
			c := s.connect(t, v, "bob-token")
			a := c.callTool("raw_bytes", map[string]any{}, nil)
			if !utf8.Valid(a.body) {
				t.Errorf("the answer on the wire is not UTF-8: %q", a.body)
			}
			if code, _, _ := a.denial(t); code != string(mcpguard.CodeInvalidResponse) {
				t.Errorf("structured content that is not UTF-8: %s, want INVALID_RESPONSE", a)
			}
			a = c.callTool("go_string", map[string]any{}, nil)
			if code, _, _ := a.denial(t); code != "" || !utf8.Valid(a.body) || !strings.Contains(string(a.resp), `a\ufffdb`) {
				t.Errorf("a Go string with an invalid byte: %s, want it passed as U+FFFD", a)
			}
			var rec *audit.Event
			for _, e := range s.sink.all() {
				if e.Tool == "raw_bytes" {
					rec = &e
				}
			}
			if rec == nil || rec.Code != string(mcpguard.CodeInvalidResponse) || !strings.Contains(rec.Detail, "UTF-8") {
				t.Errorf("record of raw_bytes: %+v, want INVALID_RESPONSE saying why", rec)
			}
		})
	}
	t.Run("validate_output_step", func(t *testing.T) {
		v, err := mcpguard.NewOutputValidator(labelOut)
		if err != nil {
			t.Fatal(err)
		}
		h := mcpguard.ValidateOutput(v)(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: json.RawMessage(smuggled)}, nil
		})
		res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "raw_bytes"}})
		if err != nil || errorCode(t, res) != string(mcpguard.CodeInvalidResponse) {
			t.Errorf("ValidateOutput: %v %s, want INVALID_RESPONSE", err, mustJSON(res))
		}
	})
}
