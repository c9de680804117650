package mcpguard

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review42cDeep returns a JSON object whose key "d" holds levels nested
// arrays: the object nests levels+1 deep.
func review42cDeep(levels int) json.RawMessage {
	return json.RawMessage(`{"d":` + strings.Repeat("[", levels) + strings.Repeat("]", levels) + `}`)
}

// review42cVerdict is what checkResult says of a result: "" for accepted,
// else its error's text, with a *tooLarge told apart.
func review42cVerdict(err error) string {
	switch err.(type) {
	case nil:
		return ""
	case *tooLarge:
		return "too large: " + err.Error()
	}
	return err.Error()
}

// Step 11 checks a result's size against MaxOutputBytes, its content
// before its structured content, each part on its own; that the go-sdk can
// send it as UTF-8 nested at most 512 levels deep; and, for a successful
// result of a tool with an output schema, that its structured content is
// there, has no duplicate key and fits the schema. Encoded JSON (a
// json.RawMessage) is measured as it is, whitespace and all, before it is
// read: a value the go-sdk encodes, by its encoding.
func TestReview42cCheckResult(t *testing.T) {
	out, err := NewOutputValidator(json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	text := func(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }
	padded := json.RawMessage(`{"n": 1            }`) // 20 bytes, 7 compacted
	badUTF8 := json.RawMessage("{\"s\":\"\xff\"}")
	asks := mcp.InputRequestMap{"r": &mcp.ElicitParams{Mode: "form", Message: "m"}}
	for _, tc := range []struct {
		name   string
		schema bool // the tool has the output schema out
		res    *mcp.CallToolResult
		max    int
		want   string
	}{
		{"schema_fits", true, &mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}}, -1, ""},
		{"schema_no_structured", true, &mcp.CallToolResult{}, -1, "no structured content although the tool has an output schema"},
		{"schema_raw_padded_over", true, &mcp.CallToolResult{StructuredContent: padded}, 10, "too large: structured content of 20 bytes, over the cap of 10 (MaxOutputBytes)"},
		{"schema_raw_padded_cap_zero", true, &mcp.CallToolResult{StructuredContent: padded}, 0, "too large: structured content of 20 bytes, over the cap of 0 (MaxOutputBytes)"},
		{"schema_raw_padded_at_cap", true, &mcp.CallToolResult{StructuredContent: padded}, 20, ""},
		{"schema_unmarshalable", true, &mcp.CallToolResult{StructuredContent: map[string]any{"n": math.NaN()}}, -1, "structured content does not marshal"},
		{"schema_value_at_cap", true, &mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}}, 7, ""},
		{"schema_value_over", true, &mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}}, 6, "too large: structured content of 7 bytes, over the cap of 6 (MaxOutputBytes)"},
		{"schema_value_cap_zero", true, &mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}}, 0, "too large: structured content of 7 bytes, over the cap of 0 (MaxOutputBytes)"},
		{"schema_not_utf8", true, &mcp.CallToolResult{StructuredContent: badUTF8}, -1, "structured content is not UTF-8"},
		{"schema_nested_512", true, &mcp.CallToolResult{StructuredContent: review42cDeep(511)}, -1, ""},
		{"schema_nested_513", true, &mcp.CallToolResult{StructuredContent: review42cDeep(512)}, -1, "structured content is nested more than 512 levels deep"},
		{"schema_duplicate_key", true, &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"n":1,"n":2}`)}, -1, `INVALID_ARGUMENTS: argument "n" appears twice`},
		{"schema_broken", true, &mcp.CallToolResult{StructuredContent: map[string]any{"n": "x"}}, -1, `INVALID_ARGUMENTS: argument "n" must be integer`},
		{"schema_tool_error_unchecked", true, &mcp.CallToolResult{IsError: true, StructuredContent: map[string]any{"n": "x"}}, -1, ""},
		{"schema_tool_error_no_structured", true, &mcp.CallToolResult{IsError: true}, -1, ""},
		{"schema_tool_error_still_encodes", true, &mcp.CallToolResult{IsError: true, StructuredContent: json.RawMessage(`{"n":`)}, -1, "structured content is not valid JSON"},
		{"schema_asks_unchecked", true, &mcp.CallToolResult{InputRequests: asks, StructuredContent: map[string]any{"n": "x"}}, -1, ""},
		{"content_at_cap", true, &mcp.CallToolResult{Content: text("abcdefgh"), StructuredContent: map[string]any{"n": 1}}, 8, ""},
		{"content_over", true, &mcp.CallToolResult{Content: text("abcdefgh"), StructuredContent: map[string]any{"n": 1}}, 7, "too large: content of 8 bytes, over the cap of 7 (MaxOutputBytes)"},
		{"content_cap_zero", false, &mcp.CallToolResult{Content: text("a")}, 0, "too large: content of 1 bytes, over the cap of 0 (MaxOutputBytes)"},
		{"content_nil_block", false, &mcp.CallToolResult{Content: []mcp.Content{nil}}, -1, "a content block is nil"},
		{"plain_no_structured", false, &mcp.CallToolResult{Content: text("a")}, 0, "too large: content of 1 bytes, over the cap of 0 (MaxOutputBytes)"},
		{"plain_nil_structured_cap_zero", false, &mcp.CallToolResult{}, 0, ""},
		{"plain_raw_padded_over", false, &mcp.CallToolResult{StructuredContent: padded}, 19, "too large: structured content of 20 bytes, over the cap of 19 (MaxOutputBytes)"},
		{"plain_raw_cap_zero", false, &mcp.CallToolResult{StructuredContent: json.RawMessage(`{}`)}, 0, "too large: structured content of 2 bytes, over the cap of 0 (MaxOutputBytes)"},
		{"plain_raw_padded_at_cap", false, &mcp.CallToolResult{StructuredContent: padded}, 20, ""},
		{"plain_raw_invalid", false, &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"n":`)}, -1, "structured content is not valid JSON"},
		{"plain_raw_nil", false, &mcp.CallToolResult{StructuredContent: json.RawMessage(nil)}, -1, ""},
		{"plain_raw_fine", false, &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"n":"x"}`)}, -1, ""},
		{"plain_raw_not_utf8", false, &mcp.CallToolResult{StructuredContent: badUTF8}, -1, "structured content is not UTF-8"},
		{"plain_raw_nested_512", false, &mcp.CallToolResult{StructuredContent: review42cDeep(511)}, -1, ""},
		{"plain_raw_nested_513", false, &mcp.CallToolResult{StructuredContent: review42cDeep(512)}, -1, "structured content is nested more than 512 levels deep"},
		{"plain_unmarshalable", false, &mcp.CallToolResult{StructuredContent: map[string]any{"n": math.NaN()}}, -1, "structured content does not marshal"},
		{"plain_value_at_cap", false, &mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}}, 7, ""},
		{"plain_value_over", false, &mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}}, 6, "too large: structured content of 7 bytes, over the cap of 6 (MaxOutputBytes)"},
		{"plain_value_cap_zero", false, &mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}}, 0, "too large: structured content of 7 bytes, over the cap of 0 (MaxOutputBytes)"},
		{"plain_value_holds_not_utf8", false, &mcp.CallToolResult{StructuredContent: map[string]any{"r": badUTF8}}, -1, "structured content is not UTF-8"},
		{"plain_value_nested_512", false, &mcp.CallToolResult{StructuredContent: []any{review42cDeep(510)}}, -1, ""},
		{"plain_value_nested_513", false, &mcp.CallToolResult{StructuredContent: []any{review42cDeep(511)}}, -1, "structured content is nested more than 512 levels deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := toolEntry{}
			if tc.schema {
				e.out = out
			}
			got := review42cVerdict(e.checkResult(tc.res, tc.max))
			if got != tc.want {
				t.Errorf("checkResult(res, %d) = %q, want %q", tc.max, got, tc.want)
			}
		})
	}
}

// restBytes counts the payloads of the content blocks and the JSON of
// every other part but the structured content, and fails on a part the
// go-sdk could not send.
func TestReview42cRestBytes(t *testing.T) {
	enc := func(v any) int {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return len(raw)
	}
	meta := mcp.Meta{"k": "v"}             // {"k":"v"}: 9 bytes
	ann := &mcp.Annotations{Priority: 0.5} // {"priority":0.5}: 16 bytes
	badMeta := mcp.Meta{"k": math.NaN()}   // does not marshal
	badAnn := &mcp.Annotations{Priority: math.Inf(1)}
	link := &mcp.ResourceLink{URI: "file:///a", Name: "a"}
	//lint:ignore SA1019 a block of a kind a tool result does not carry, deprecated or not
	use := &mcp.ToolUseContent{ID: "1", Name: "t", Input: map[string]any{"a": 1}}
	asks := mcp.InputRequestMap{"r": &mcp.ElicitParams{Mode: "form", Message: "m"}}
	res := &mcp.ResourceContents{URI: "file:///a", MIMEType: "text/plain", Text: "hi", Blob: []byte("xyz")}
	deepMeta := mcp.Meta{"d": json.RawMessage(strings.Repeat("[", 512) + strings.Repeat("]", 512))}
	okDeepMeta := mcp.Meta{"d": json.RawMessage(strings.Repeat("[", 511) + strings.Repeat("]", 511))}
	one := func(c mcp.Content) []mcp.Content { return []mcp.Content{c} }
	type result struct {
		N   int
		Err string
	}
	for _, tc := range []struct {
		name string
		res  *mcp.CallToolResult
		want result
	}{
		{"empty", &mcp.CallToolResult{}, result{}},
		{"text", &mcp.CallToolResult{Content: one(&mcp.TextContent{Text: "abc"})}, result{N: 3}},
		{"text_meta_annotations", &mcp.CallToolResult{Content: one(&mcp.TextContent{Text: "abc", Meta: meta, Annotations: ann})}, result{N: 3 + 9 + 16}},
		{"image", &mcp.CallToolResult{Content: one(&mcp.ImageContent{Data: []byte("abcd"), MIMEType: "image/png"})}, result{N: 4 + 9}},
		{"image_meta_annotations", &mcp.CallToolResult{Content: one(&mcp.ImageContent{Data: []byte("abcd"), MIMEType: "image/png", Meta: meta, Annotations: ann})}, result{N: 4 + 9 + 9 + 16}},
		{"audio", &mcp.CallToolResult{Content: one(&mcp.AudioContent{Data: []byte("ab"), MIMEType: "audio/wav"})}, result{N: 2 + 9}},
		{"audio_meta_annotations", &mcp.CallToolResult{Content: one(&mcp.AudioContent{Data: []byte("ab"), MIMEType: "audio/wav", Meta: meta, Annotations: ann})}, result{N: 2 + 9 + 9 + 16}},
		{"embedded", &mcp.CallToolResult{Content: one(&mcp.EmbeddedResource{Resource: res})}, result{N: 9 + 10 + 2 + 3}},
		{"embedded_metas", &mcp.CallToolResult{Content: one(&mcp.EmbeddedResource{
			Resource: &mcp.ResourceContents{URI: "file:///a", Meta: mcp.Meta{"a": 1}}, Meta: meta, Annotations: ann})}, result{N: 9 + 7 + 9 + 16}},
		{"embedded_no_resource", &mcp.CallToolResult{Content: one(&mcp.EmbeddedResource{Annotations: ann})}, result{N: 16}},
		{"resource_link", &mcp.CallToolResult{Content: one(link)}, result{N: enc(link)}},
		{"tool_use", &mcp.CallToolResult{Content: one(use)}, result{N: enc(use)}},
		{"several", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ab"}, &mcp.TextContent{Text: "cde"}}}, result{N: 5}},
		{"request_state", &mcp.CallToolResult{RequestState: "state"}, result{N: 5}},
		{"result_meta", &mcp.CallToolResult{Meta: meta}, result{N: 9}},
		{"input_requests", &mcp.CallToolResult{InputRequests: asks}, result{N: enc(asks)}},
		{"nil_block", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, nil}}, result{Err: "a content block is nil"}},
		{"nil_pointer_block", &mcp.CallToolResult{Content: one((*mcp.TextContent)(nil))}, result{Err: "a content block is nil"}},
		{"text_meta_unmarshalable", &mcp.CallToolResult{Content: one(&mcp.TextContent{Meta: badMeta})}, result{Err: "the result does not marshal"}},
		{"text_annotations_unmarshalable", &mcp.CallToolResult{Content: one(&mcp.TextContent{Annotations: badAnn})}, result{Err: "the result does not marshal"}},
		{"resource_meta_unmarshalable", &mcp.CallToolResult{Content: one(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "u", Meta: badMeta}})}, result{Err: "the result does not marshal"}},
		{"resource_link_unmarshalable", &mcp.CallToolResult{Content: one(&mcp.ResourceLink{URI: "u", Meta: badMeta})}, result{Err: "the result does not marshal"}},
		//lint:ignore SA1019 a block of a kind a tool result does not carry, deprecated or not
		{"tool_use_unmarshalable", &mcp.CallToolResult{Content: one(&mcp.ToolUseContent{Input: map[string]any{"a": math.NaN()}})}, result{Err: "the result does not marshal"}},
		{"result_meta_unmarshalable", &mcp.CallToolResult{Meta: badMeta}, result{Err: "the result does not marshal"}},
		{"input_requests_unmarshalable", &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"r": &mcp.ElicitParams{Meta: badMeta}}}, result{Err: "the result does not marshal"}},
		{"meta_not_utf8", &mcp.CallToolResult{Meta: mcp.Meta{"k": json.RawMessage("\"\xff\"")}}, result{Err: "the result is not UTF-8 once encoded"}},
		{"meta_nested_512", &mcp.CallToolResult{Meta: okDeepMeta}, result{N: enc(okDeepMeta)}},
		{"meta_nested_513", &mcp.CallToolResult{Meta: deepMeta}, result{Err: "the result is nested more than 512 levels deep"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := restBytes(tc.res)
			got := result{N: n}
			if err != nil {
				got = result{Err: err.Error()}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("restBytes(res) (-want +got):\n%s", diff)
			}
		})
	}
}
