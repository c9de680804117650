package mcpguard_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// big is 5 MiB, over the default cap of Options.MaxOutputBytes.
var big = strings.Repeat("a", 5<<20)

// wrapDump guards the tool dump (a read, no output schema), whose handler
// returns res(), with the default cap, audit to sink.
func wrapDump(t *testing.T, sink *memSink, res func() *mcp.CallToolResult) mcp.ToolHandler {
	t.Helper()
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "dump", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	tool := &mcp.Tool{Name: "dump", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	h, err := g.Wrap(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res(), nil })
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// MaxOutputBytes caps "the size of a tool's result", but counted only the
// texts and data of its content blocks and its structured content: 5 MiB
// anywhere else in a result (its _meta, a block's _meta, annotations or
// MIME type, a resource link's icon, the input a multi round-trip result
// asks for, its request state) went through under the 4 MiB cap.
func TestReview17bOutputCapCountsTheWholeResult(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  func() *mcp.CallToolResult
	}{
		{"result_meta", func() *mcp.CallToolResult {
			r := textResult("ok")
			r.Meta = mcp.Meta{"x": big}
			return r
		}},
		{"block_meta", func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok", Meta: mcp.Meta{"x": big}}}}
		}},
		{"block_annotations", func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok", Annotations: &mcp.Annotations{LastModified: big}}}}
		}},
		{"image_mime_type", func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}, MIMEType: big}}}
		}},
		{"embedded_resource_mime_type", func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a", MIMEType: big, Text: "a"}}}}
		}},
		{"resource_link_icon", func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: "file:///a", Name: "a", Icons: []mcp.Icon{{Source: "data:image/png;base64," + big}}}}}
		}},
		{"input_requests", func() *mcp.CallToolResult {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: big}}, RequestState: "s"}
		}},
		{"request_state", func() *mcp.CallToolResult {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "ok?"}}, RequestState: big}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{}
			h := wrapDump(t, sink, tc.res)
			res, err := h(context.Background(), req("dump", `{}`))
			if got := codeOf(t, res, err); got != string(mcpguard.CodeInvalidResponse) {
				t.Fatalf("a result with 5 MiB in its %s under the default cap of 4 MiB: code %q, result of %d bytes; want INVALID_RESPONSE",
					tc.name, got, len(mustJSON(res)))
			}
			if evs := sink.all(); len(evs) != 1 || !strings.Contains(evs[0].Detail, "over the cap") {
				t.Errorf("records %+v, want one saying the result is over the cap", evs)
			}
		})
	}
	// Under the cap, such results go through.
	sink := &memSink{}
	h := wrapDump(t, sink, func() *mcp.CallToolResult {
		r := &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "ok", Meta: mcp.Meta{"k": "v"}, Annotations: &mcp.Annotations{Priority: 1}},
			&mcp.ResourceLink{URI: "file:///a", Name: "a", Icons: []mcp.Icon{{Source: "https://example.com/a.png"}}},
		}}
		r.Meta = mcp.Meta{"k": "v"}
		return r
	})
	if res, err := h(context.Background(), req("dump", `{}`)); codeOf(t, res, err) != "" {
		t.Errorf("a small result: %s, %v; want it passed on", mustJSON(res), err)
	}
}

// A result the go-sdk cannot encode (a structured content holding +Inf, of
// a tool without an output schema, which step 11 marshals only to measure
// it, ignoring the error) was passed on and recorded as allowed, while
// the client got no result: a tool with an output schema has it refused
// as INVALID_RESPONSE, and so must every tool. For a write, the write may
// have been made.
func TestReview17bUnencodableResultRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write bool
		res   func() *mcp.CallToolResult
	}{
		{"structured_inf", false, func() *mcp.CallToolResult {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"x": math.Inf(1)}}
		}},
		{"structured_inf_write", true, func() *mcp.CallToolResult {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"x": math.Inf(1)}}
		}},
		{"meta_func", false, func() *mcp.CallToolResult {
			r := textResult("ok")
			r.Meta = mcp.Meta{"f": func() {}}
			return r
		}},
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
			g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			var ran atomic.Int64
			srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
			tool := &mcp.Tool{Name: "dump", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: hint}}
			if err := g.AddTool(srv, tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				ran.Add(1)
				return tc.res(), nil
			}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			res, err := connectPlain(t, srv, nil).CallTool(ctx, &mcp.CallToolParams{Name: "dump", Arguments: map[string]any{}})
			if err != nil {
				t.Fatalf("the client got no result: %v; want an INVALID_RESPONSE tool error (handler runs %d, records %+v)", err, ran.Load(), sink.all())
			}
			code, msg, _ := refusalOf(t, res, nil)
			if code != string(mcpguard.CodeInvalidResponse) || tc.write != strings.Contains(msg, "may have been made") {
				t.Errorf("%s %q; want INVALID_RESPONSE, saying the write may have been made only for a write", code, msg)
			}
			if evs := sink.all(); len(evs) == 0 || evs[len(evs)-1].Allowed || evs[len(evs)-1].Code != string(mcpguard.CodeInvalidResponse) {
				t.Errorf("records %+v; want the outcome INVALID_RESPONSE, not allowed", evs)
			}
		})
	}
}
