package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A json.RawMessage in a result reaches the wire as its bytes are:
// encoding/json checks that it is JSON, not that it is UTF-8. A tool with
// an output schema has such structured content refused (step 11 checks
// what it validates is what is sent); one without passed it on, and so
// did any result with such bytes in its _meta: the answer is then no JSON
// text a strict client can read (RFC 8259 8.1: UTF-8; Python's
// json.loads(bytes), for one, refuses it), so the client may get no
// result at all, while the record says allowed. A Go string holding such
// bytes is sent as U+FFFD, and is not refused.
func TestReview17eNonUTF8ResultRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  func() *mcp.CallToolResult
		want string
	}{
		{"structured_raw", func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}, StructuredContent: json.RawMessage("{\"a\":\"\xff\"}")}
		}, string(mcpguard.CodeInvalidResponse)},
		{"structured_map_with_raw", func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}, StructuredContent: map[string]any{"a": json.RawMessage("\"\xff\"")}}
		}, string(mcpguard.CodeInvalidResponse)},
		{"result_meta", func() *mcp.CallToolResult {
			r := textResult("x")
			r.Meta = mcp.Meta{"m": json.RawMessage("\"\xfe\"")}
			return r
		}, string(mcpguard.CodeInvalidResponse)},
		{"block_meta", func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x", Meta: mcp.Meta{"m": json.RawMessage("\"\xfe\"")}}}}
		}, string(mcpguard.CodeInvalidResponse)},
		{"go_string", func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "\xff"}}, StructuredContent: map[string]any{"a": "\xff"}}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wire, err := json.Marshal(tc.res())
			if err != nil {
				t.Fatal(err)
			}
			if utf8.Valid(wire) == (tc.want != "") {
				t.Fatalf("the result encodes as %q: the case does not test what it says", wire)
			}
			sink := &memSink{}
			res, err := wrapDump(t, sink, tc.res)(context.Background(), req("dump", `{}`))
			if got := codeOf(t, res, err); got != tc.want {
				t.Errorf("result %q: code %q, want %q", wire, got, tc.want)
			}
			if evs := sink.all(); len(evs) != 1 || evs[0].Allowed != (tc.want == "") {
				t.Errorf("records %+v; want one, allowed only if the result passed", evs)
			}
		})
	}
}
