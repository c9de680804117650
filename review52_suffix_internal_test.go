// Sampling requests and log messages are deprecated as of protocol
// 2026-07-28, but handlers still send them within the deprecation window.
//lint:file-ignore SA1019 the messages a handler may still send

package mcpguard

import (
	"math"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview52WithoutSuffixFails: withoutSuffix, which takes the guard's
// suffix out of a message a handler sends while the guard asks about a
// hidden UI resource, reports that it could not (and the message is not
// sent, see sendingResources) for a nil request, for params that do not
// encode (a log message's NaN), and for params whose encoding, the suffix
// taken out, does not decode back (a sampling request's message without
// content); it hands the request back as it came.
func TestReview52WithoutSuffixFails(t *testing.T) {
	type logReq = mcp.LoggingMessageRequest
	for _, tc := range []struct {
		name string
		req  mcp.Request
	}{
		{"nil request", (*logReq)(nil)},
		{"params that do not encode", &logReq{Params: &mcp.LoggingMessageParams{Level: "info",
			Data: map[string]any{"uri": "ui://admin/app" + absentSuffix, "x": math.NaN()}}}},
		{"params that do not decode back", &mcp.CreateMessageRequest{Params: &mcp.CreateMessageParams{
			SystemPrompt: "see ui://admin/app" + absentSuffix, Messages: []*mcp.SamplingMessage{{Role: "user"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := withoutSuffix(tc.req)
			if ok {
				t.Fatalf("withoutSuffix(%T) succeeded, want it to fail", tc.req)
			}
			if out != tc.req {
				t.Errorf("withoutSuffix handed back %p, want the request itself (%p)", out, tc.req)
			}
		})
	}
	// The same sampling request with content decodes back: the suffix is
	// taken out, the request sent is a copy, the handler's own untouched.
	p := &mcp.CreateMessageParams{SystemPrompt: "see ui://admin/app" + absentSuffix,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}
	in := &mcp.CreateMessageRequest{Params: p}
	out, ok := withoutSuffix(in)
	if !ok {
		t.Fatal("withoutSuffix failed a sampling request with content")
	}
	got := out.(*mcp.CreateMessageRequest).Params
	if got.SystemPrompt != "see ui://admin/app" || got == p {
		t.Errorf("sent system prompt %q (params copied: %v), want %q in a copy", got.SystemPrompt, got != p, "see ui://admin/app")
	}
	if !strings.HasSuffix(p.SystemPrompt, absentSuffix) {
		t.Errorf("the handler's own params changed: %q", p.SystemPrompt)
	}
}
