package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review25Blocks are content blocks that no client can be sent: nil (the
// go-sdk sends null, which its client refuses to read: "nil content"), and
// nil pointers of every kind a result may hold, on which go-sdk v1.8.0
// panics while encoding the answer, outside any middleware, ending the
// process (mcp.Content has MarshalJSON in its method set, so encoding/json
// calls it on the nil pointer).
var review25Blocks = map[string]mcp.Content{
	"nil":          nil,
	"nil_text":     (*mcp.TextContent)(nil),
	"nil_image":    (*mcp.ImageContent)(nil),
	"nil_audio":    (*mcp.AudioContent)(nil),
	"nil_embedded": (*mcp.EmbeddedResource)(nil),
	"nil_link":     (*mcp.ResourceLink)(nil),
	//lint:ignore SA1019 a block of a kind a tool result does not carry, deprecated or not
	"nil_tool_use": (*mcp.ToolUseContent)(nil),
	//lint:ignore SA1019 a block of a kind a tool result does not carry, deprecated or not
	"nil_tool_result": (*mcp.ToolResultContent)(nil),
}

// A tool's result whose content holds a nil block passed step 11 (the
// size count skipped nil blocks): a nil pointer then made the go-sdk
// panic encoding the answer and ended the server, and a nil one reached
// the client as null, which it could not read, while the call was
// recorded as allowed. Each is now refused as INVALID_RESPONSE, recorded
// once as such, and the session goes on.
func TestReview25NilContentBlockRefused(t *testing.T) {
	cfg := basePolicy(false)
	cfg.Tools = append(cfg.Tools, policy.ToolRule{Name: "blocks", Class: policy.Read})
	h := newServerHarness(t, cfg, nil, func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "blocks", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var args struct{ Kind string }
				if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
					return nil, err
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}, review25Blocks[args.Kind]}}, nil
			})
	})
	for _, v := range protocolVersions {
		for kind := range review25Blocks {
			t.Run(versionName(v)+"/"+kind, func(t *testing.T) {
				cs := h.connect(bob, clientOpts{version: v})
				before := len(h.sink.all())
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "blocks", Arguments: map[string]any{"kind": kind}})
				if err != nil {
					t.Fatalf("blocks %s: %v, want an INVALID_RESPONSE result", kind, err)
				}
				if code := errorCode(t, res); code != "INVALID_RESPONSE" {
					t.Errorf("blocks %s: code %q, want INVALID_RESPONSE: %s", kind, code, mustJSON(res))
				}
				var recs []audit.Event
				for _, e := range h.sink.all()[before:] {
					if e.Tool == "blocks" {
						recs = append(recs, e)
					}
				}
				if len(recs) != 1 || recs[0].Allowed || recs[0].Code != "INVALID_RESPONSE" {
					t.Errorf("blocks %s: records %+v, want one refusal INVALID_RESPONSE", kind, recs)
				}
				review24cAlive(t, cs)
			})
		}
	}
}

// A prompt's message whose content is a nil pointer made the go-sdk panic
// encoding the answer (ending the server); one with no content reached
// the client as null, which it could not read. Both are refused as a
// malformed result (-32603), as other prompts/get results the client
// could not read are, and the session goes on.
func TestReview25PromptNilContentRefused(t *testing.T) {
	h := newServerHarness(t, basePolicy(false), nil, func(s *mcp.Server) {
		for kind, c := range review25Blocks {
			s.AddPrompt(&mcp.Prompt{Name: kind}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "ok"}}, {Role: "user", Content: c}}}, nil
			})
		}
		s.AddPrompt(&mcp.Prompt{Name: "fine"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "ok"}}}}, nil
		})
	})
	for _, v := range protocolVersions {
		for kind := range review25Blocks {
			t.Run(versionName(v)+"/"+kind, func(t *testing.T) {
				cs := review24cConnect(t, h, bob, v)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: kind})
				review24cRefused(t, "prompts/get "+kind, err)
				if res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "fine"}); err != nil || len(res.Messages) != 1 {
					t.Errorf("prompts/get fine: %v %s", err, mustJSON(res))
				}
				review24cAlive(t, cs)
			})
		}
	}
}

// review25ByValue is a custom method's result type used by value, its
// ResultBase embedded as a pointer: a value that holds none reaches its
// _meta through a nil pointer.
type review25ByValue struct {
	*mcp.ResultBase
	Data string `json:"data,omitempty"`
}

// A custom method's result of a value type whose _meta sits behind a nil
// embedded pointer passed the typed-nil check of d30aeb2 (it is no
// pointer), and go-sdk v1.8.0, reading its _meta after every middleware on
// protocol 2026-07-28, panicked and ended the server. It is refused as a
// malformed result (-32603) on every protocol, as a nil *T is, and the
// session goes on; the same type with its ResultBase set passes.
func TestReview25NilEmbeddedResultBaseRefused(t *testing.T) {
	h := newServerHarness(t, basePolicy(false), nil, func(s *mcp.Server) {
		err := mcp.AddReceivingCustomMethod(s, "acme/data", func(_ context.Context, _ *mcp.ServerSession, p *review24cParams) (review25ByValue, error) {
			if p.Kind == "set" {
				return review25ByValue{ResultBase: &mcp.ResultBase{}, Data: "ok"}, nil
			}
			return review25ByValue{Data: "ok"}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			cs := review24cConnect(t, h, bob, v)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := mcp.CallCustomMethod[*review24cParams, *review24cResult](ctx, cs, "acme/data", &review24cParams{Kind: "unset"})
			review24cRefused(t, "acme/data unset", err)
			res, err := mcp.CallCustomMethod[*review24cParams, *review24cResult](ctx, cs, "acme/data", &review24cParams{Kind: "set"})
			if err != nil || res.Data != "ok" {
				t.Errorf("acme/data set: %v %s", err, mustJSON(res))
			}
			review24cAlive(t, cs)
		})
	}
}
