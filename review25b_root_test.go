package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review25bPanics is a value whose MarshalJSON panics: encoding/json
// recovers only its own panics, so the go-sdk's encoding of an answer that
// holds one ends the process.
type review25bPanics struct{}

func (*review25bPanics) MarshalJSON() ([]byte, error) { panic("review25b: MarshalJSON panicked") }

// review25bErr is an error type whose nil pointer panics when asked its
// text: a handler that returns one (var err *review25bErr; return nil, err)
// returns a non-nil error.
type review25bErr struct{ msg string }

func (e *review25bErr) Error() string { return e.msg }

// review25bErrors are the errors, each a nil pointer somewhere, that
// go-sdk v1.8.0 panics on after every middleware while it answers with
// them (its jsonrpc2 asks errors.Is of a nil *jsonrpc.Error, and the text
// of the error, and reads the code of a *jsonrpc.Error it wraps).
var review25bErrors = map[string]error{
	"err_nil_wire":         (*jsonrpc.Error)(nil),
	"err_nil_custom":       (*review25bErr)(nil),
	"err_wrapped_nil_wire": fmt.Errorf("reading: %w", (*jsonrpc.Error)(nil)),
}

// review25bNestedNil is a content block that holds a nil one: go-sdk
// v1.8.0's ToolResultContent.MarshalJSON calls MarshalJSON on each of its
// blocks, and panics on a nil one.
func review25bNestedNil() mcp.Content {
	//lint:ignore SA1019 a block of a kind a result does not carry, deprecated or not
	return &mcp.ToolResultContent{ToolUseID: "t", Content: []mcp.Content{nil}}
}

// review25bSampling is an input request whose message's content is a nil
// pointer: encoding it panics.
func review25bSampling() mcp.InputRequestMap {
	//lint:ignore SA1019 an input request of any kind a handler may return
	return mcp.InputRequestMap{"s": &mcp.CreateMessageParams{MaxTokens: 1, Messages: []*mcp.SamplingMessage{{Role: "user", Content: (*mcp.TextContent)(nil)}}}}
}

// review25bServer is a server whose prompt, resource, completion and custom
// method answer as the kind they are asked for says: a result with a part
// the go-sdk panics encoding, or an error it panics answering with.
func review25bServer(t *testing.T) *harness {
	cfg := basePolicy(false)
	cfg.Tools = append(cfg.Tools, policy.ToolRule{Name: "shapes", Class: policy.Read})
	sopts := &mcp.ServerOptions{
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			kind := req.Params.Argument.Name
			if err, ok := review25bErrors[kind]; ok {
				return nil, err
			}
			res := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"a"}}}
			if kind == "meta_panics" {
				res.Meta = mcp.Meta{"x": &review25bPanics{}}
			}
			return res, nil
		},
	}
	return newServerHarness(t, cfg, sopts, func(s *mcp.Server) {
		for _, kind := range []string{"ok", "meta_panics", "nested_nil", "sampling_nil_content", "err_nil_wire", "err_nil_custom", "err_wrapped_nil_wire"} {
			s.AddPrompt(&mcp.Prompt{Name: kind, Arguments: []*mcp.PromptArgument{{Name: "x"}}}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				if err, ok := review25bErrors[kind]; ok {
					return nil, err
				}
				res := &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "ok"}}}}
				switch kind {
				case "meta_panics":
					res.Meta = mcp.Meta{"x": &review25bPanics{}}
				case "nested_nil":
					res.Messages = append(res.Messages, &mcp.PromptMessage{Role: "user", Content: review25bNestedNil()})
				case "sampling_nil_content":
					res.Messages, res.InputRequests = nil, review25bSampling()
				}
				return res, nil
			})
			uri := "file:///" + kind
			s.AddResource(&mcp.Resource{URI: uri, Name: kind}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				if err, ok := review25bErrors[kind]; ok {
					return nil, err
				}
				res := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "ok"}}}
				switch kind {
				case "meta_panics":
					res.Meta = mcp.Meta{"x": &review25bPanics{}}
				case "nested_nil": // for a read: a nil content
					res.Contents = append(res.Contents, nil)
				case "sampling_nil_content":
					res.Contents, res.InputRequests = nil, review25bSampling()
				}
				return res, nil
			})
		}
		err := mcp.AddReceivingCustomMethod(s, "acme/data", func(_ context.Context, _ *mcp.ServerSession, p *review24cParams) (*review24cResult, error) {
			if err, ok := review25bErrors[p.Kind]; ok {
				return nil, err
			}
			res := &review24cResult{Data: "ok"}
			switch p.Kind {
			case "meta_panics":
				res.Meta = mcp.Meta{"x": &review25bPanics{}}
			case "nested_nil":
				res.Data = []mcp.Content{review25bNestedNil()}
			}
			return res, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		s.AddTool(&mcp.Tool{Name: "shapes", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var args struct{ Kind string }
				if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
					return nil, err
				}
				res := textResult("ok")
				switch args.Kind {
				case "meta_panics":
					res.Meta = mcp.Meta{"x": &review25bPanics{}}
				case "block_meta_panics":
					res.Content = []mcp.Content{&mcp.TextContent{Text: "ok", Meta: mcp.Meta{"x": &review25bPanics{}}}}
				case "structured_panics":
					res.StructuredContent = map[string]any{"x": &review25bPanics{}}
				case "nested_nil":
					res.Content = append(res.Content, review25bNestedNil())
				case "sampling_nil_content":
					res.Content, res.InputRequests = nil, review25bSampling()
				}
				return res, nil
			})
	})
}

// The guard reads the parts of a prompt, a read, a completion or a custom
// method's result that the go-sdk could fail to encode, with
// encoding/json, which recovers no panic of a MarshalJSON: a part whose
// MarshalJSON panicked (a value of the handler's own, or a content block
// holding a nil one, as go-sdk v1.8.0's ToolResultContent does) made the
// guard's own check panic in its middleware, ending the process (without
// the guard, the go-sdk's encoding of the answer did). Each is now refused
// as a malformed result (-32603), as one the go-sdk could not encode is,
// and the session goes on.
func TestReview25bMarshalPanicRefused(t *testing.T) {
	h := review25bServer(t)
	for _, v := range protocolVersions {
		for _, kind := range []string{"meta_panics", "nested_nil", "sampling_nil_content"} {
			if kind == "sampling_nil_content" && v != "" {
				// On 2025-11-25 the go-sdk asks the client itself, below
				// the guard: TestReview25bOldSamplingNilContent.
				continue
			}
			t.Run(versionName(v)+"/"+kind, func(t *testing.T) {
				cs := review24cConnect(t, h, bob, v)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: kind})
				review24cRefused(t, "prompts/get "+kind, err)
				if kind != "nested_nil" { // a read's nil content: TestReview25bReadNilContentRefused
					_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///" + kind})
					review24cRefused(t, "resources/read "+kind, err)
				}
				if kind != "sampling_nil_content" {
					_, err = mcp.CallCustomMethod[*review24cParams, *review24cResult](ctx, cs, "acme/data", &review24cParams{Kind: kind})
					review24cRefused(t, "acme/data "+kind, err)
				}
				if kind == "meta_panics" {
					_, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "ok"}, Argument: mcp.CompleteParamsArgument{Name: kind}})
					review24cRefused(t, "completion/complete "+kind, err)
				}
				if res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ok"}); err != nil || len(res.Messages) != 1 {
					t.Errorf("prompts/get ok: %v %s", err, mustJSON(res))
				}
				review24cAlive(t, cs)
			})
		}
	}
}

// A tool's result with a part whose MarshalJSON panics made step 11's
// check panic: the call was answered INTERNAL ("the tool failed
// unexpectedly"), as if the handler had panicked. It is a malformed
// result, refused as INVALID_RESPONSE as one the go-sdk cannot encode is,
// and recorded once as such.
func TestReview25bToolMarshalPanicInvalidResponse(t *testing.T) {
	h := review25bServer(t)
	for _, v := range protocolVersions {
		for _, kind := range []string{"meta_panics", "block_meta_panics", "structured_panics", "nested_nil", "sampling_nil_content"} {
			if kind == "sampling_nil_content" && v != "" {
				continue // the go-sdk fulfils input requests below the guard
			}
			t.Run(versionName(v)+"/"+kind, func(t *testing.T) {
				cs := h.connect(bob, clientOpts{version: v})
				before := len(h.sink.all())
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shapes", Arguments: map[string]any{"kind": kind}})
				if err != nil {
					t.Fatalf("shapes %s: %v, want an INVALID_RESPONSE result", kind, err)
				}
				if code := errorCode(t, res); code != "INVALID_RESPONSE" {
					t.Errorf("shapes %s: code %q, want INVALID_RESPONSE: %s", kind, code, mustJSON(res))
				}
				var recs []audit.Event
				for _, e := range h.sink.all()[before:] {
					if e.Tool == "shapes" {
						recs = append(recs, e)
					}
				}
				if len(recs) != 1 || recs[0].Allowed || recs[0].Code != "INVALID_RESPONSE" {
					t.Errorf("shapes %s: records %+v, want one refusal INVALID_RESPONSE", kind, recs)
				}
				review24cAlive(t, cs)
			})
		}
	}
}

// An error that is a nil pointer (the Go trap: var err *T; return nil,
// err), or wraps a nil *jsonrpc.Error, returned by a prompt's, a
// resource's, a completion's or a custom method's handler, was passed on
// by the guard, and go-sdk v1.8.0 panicked answering with it, after every
// middleware: the process ended. It is now refused as a malformed answer
// (-32603), and the session goes on. (A tool's handler's is answered
// INTERNAL, its text unread: step 11's recover.)
func TestReview25bNilErrorRefused(t *testing.T) {
	h := review25bServer(t)
	for _, v := range protocolVersions {
		for kind := range review25bErrors {
			t.Run(versionName(v)+"/"+kind, func(t *testing.T) {
				cs := review24cConnect(t, h, bob, v)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: kind})
				review24cRefused(t, "prompts/get "+kind, err)
				_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///" + kind})
				review24cRefused(t, "resources/read "+kind, err)
				_, err = mcp.CallCustomMethod[*review24cParams, *review24cResult](ctx, cs, "acme/data", &review24cParams{Kind: kind})
				review24cRefused(t, "acme/data "+kind, err)
				_, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "ok"}, Argument: mcp.CompleteParamsArgument{Name: kind}})
				review24cRefused(t, "completion/complete "+kind, err)
				review24cAlive(t, cs)
			})
		}
	}
	// An error that is not a nil pointer is passed on as it was.
	cs := review24cConnect(t, h, bob, "")
	_, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "missing"})
	if we := wireError(err); we == nil || strings.Contains(we.Message, "malformed") {
		t.Errorf("prompts/get missing: %v, want the go-sdk's own error", err)
	}
}

// A resource handler's result with a nil content panics in go-sdk
// v1.8.0's own resources/read handler, below the guard (it fills in each
// content's URI), before the guard sees the result: the panic ended the
// process. It unwinds through the guard's middleware, which now refuses
// the read as a malformed result (-32603); the session goes on.
func TestReview25bReadNilContentRefused(t *testing.T) {
	h := review25bServer(t)
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			cs := review24cConnect(t, h, bob, v)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///nested_nil"})
			review24cRefused(t, "resources/read nested_nil", err)
			if res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///ok"}); err != nil || len(res.Contents) != 1 {
				t.Errorf("resources/read ok: %v %s", err, mustJSON(res))
			}
			review24cAlive(t, cs)
		})
	}
}

// On protocol 2025-11-25 go-sdk v1.8.0 fulfils a handler's input requests
// itself, below the guard (its client cannot), asking the client from
// goroutines of its own: a sampling request whose message's content is a
// nil pointer panicked there, in the go-sdk's encoding of the request
// under the guard's sending middleware, ending the process. The guard now
// refuses to send it: the prompt is refused as malformed (-32603), the
// tool call fails, and the session goes on. (A read that asks for input
// with no contents the go-sdk refuses on this protocol before it asks.)
func TestReview25bOldSamplingNilContent(t *testing.T) {
	h := review25bServer(t)
	cs := review24cConnect(t, h, bob, "2025-11-25")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "sampling_nil_content"})
	review24cRefused(t, "prompts/get sampling_nil_content", err)
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///sampling_nil_content"}); err == nil {
		t.Error("resources/read sampling_nil_content: no error")
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shapes", Arguments: map[string]any{"kind": "sampling_nil_content"}})
	if we := wireError(err); (we == nil || we.Code != jsonrpc.CodeInternalError) && (err != nil || !res.IsError) {
		t.Errorf("shapes sampling_nil_content: %v %s, want a refusal", err, mustJSON(res))
	}
	review24cAlive(t, cs)
}
