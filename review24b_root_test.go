package mcpguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A completion/complete result is sent as the guard's caller gets it, as a
// resources/read or prompts/get result is: one nested more than 1000 levels
// deep (in its _meta, the only part that nests) closed the caller's session
// (go-sdk v1.8.0's client refuses such a message), one the go-sdk cannot
// encode (NaN) got no answer at all, and a json.RawMessage that is not
// UTF-8 went out as such. The guard now refuses each with a JSON-RPC error
// -32603, as it does a read's or a prompt's, and the session goes on; a
// result nested 500 deep still passes.
func TestReview24bCompletionResultChecked(t *testing.T) {
	var deep500, deep1100 = review20Deep(500), review20Deep(1100)
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ServerOptions{
		CompletionHandler: func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			res := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"a"}}}
			switch req.Params.Argument.Name {
			case "deep500":
				res.Meta = mcp.Meta{"d": deep500}
			case "deep1100":
				res.Meta = mcp.Meta{"d": deep1100}
			case "nan":
				res.Meta = mcp.Meta{"d": math.NaN()}
			case "not_utf8":
				res.Meta = mcp.Meta{"d": json.RawMessage("\"\xfe\"")}
			case "go_string": // sent as U+FFFD: passes
				res.Completion.Values = []string{"\xff"}
			}
			return res, nil
		},
	})
	srv.AddTool(&mcp.Tool{Name: "ok", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil })
	srv.AddPrompt(&mcp.Prompt{Name: "p", Arguments: []*mcp.PromptArgument{{Name: "x"}}}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "ok", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, srv: srv, g: g, auth: auth}
	for _, v := range protocolVersions {
		for _, tc := range []struct {
			arg  string
			pass bool
		}{{"deep500", true}, {"go_string", true}, {"deep1100", false}, {"nan", false}, {"not_utf8", false}} {
			t.Run(versionName(v)+"/"+tc.arg, func(t *testing.T) {
				h.t = t
				cs := h.connect(bob, clientOpts{version: v})
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				defer cancel()
				res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "p"}, Argument: mcp.CompleteParamsArgument{Name: tc.arg}})
				if tc.pass {
					if err != nil || res == nil || len(res.Completion.Values) != 1 {
						t.Fatalf("completion %s: %v %+v, want its result", tc.arg, err, res)
					}
				} else {
					we := wireError(err)
					if we == nil || we.Code != jsonrpc.CodeInternalError || !strings.Contains(we.Message, "malformed") {
						t.Errorf("completion %s: %v %+v, want JSON-RPC error %d (a malformed result)", tc.arg, err, res, jsonrpc.CodeInternalError)
					}
				}
				if res, err := call(t, cs, "ok", map[string]any{}); err != nil || res.IsError {
					t.Fatalf("the next call on the session: %v %s", err, mustJSON(res))
				}
			})
		}
	}
}

// syncBuf is a log buffer the handler's goroutine and the test share.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// 9a29c72 records a read whose client cancelled it while it ran, its
// handler returning context.Canceled, as the client's leaving. Its branch
// came before the classification the package doc promises: an error
// wrapping ErrUpstreamUnavailable (or context.DeadlineExceeded) becomes
// UPSTREAM_UNAVAILABLE. A handler that reports its downstream's failure
// so, wrapping the ctx error it got ("%w: %w"), was recorded INTERNAL once
// its client had cancelled. The code is now the doc's, the detail and the
// Info log line the client's leaving. A handler's own context.Canceled,
// its client still there, is a failure of the tool's, as before.
func TestReview24bCancelledReadKeepsDocCode(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cancel     bool // the client cancels while the handler runs
		err        func(ctx context.Context) error
		code, want string // want: in the detail
		level      string // of the log line
	}{
		{"client_gone_upstream", true, func(ctx context.Context) error {
			return fmt.Errorf("%w: %w", mcpguard.ErrUpstreamUnavailable, ctx.Err())
		}, "UPSTREAM_UNAVAILABLE", "went away", "INFO"},
		{"client_gone_plain", true, func(ctx context.Context) error { return ctx.Err() }, "INTERNAL", "went away", "INFO"},
		{"own_cancel", false, func(context.Context) error { return context.Canceled }, "INTERNAL", "handler error", "WARN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink, logs := &memSink{}, &syncBuf{}
			pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "r", Class: policy.Read}}})
			if err != nil {
				t.Fatal(err)
			}
			g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Logger: slog.New(slog.NewTextHandler(logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			tool := &mcp.Tool{Name: "r", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
			h, err := g.Wrap(tool, func(hctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if tc.cancel {
					cancel()
				}
				return nil, tc.err(hctx)
			})
			if err != nil {
				t.Fatal(err)
			}
			res, err := h(ctx, req("r", `{}`))
			if got := codeOf(t, res, err); got != tc.code {
				t.Errorf("answer code %q, want %q", got, tc.code)
			}
			_ = g.Wait(context.Background())
			evs := sink.all()
			if len(evs) != 1 || evs[0].Code != tc.code || !strings.Contains(evs[0].Detail, tc.want) {
				t.Errorf("records %+v, want one of code %s whose detail says %q", evs, tc.code, tc.want)
			}
			if l := logs.String(); !strings.Contains(l, "level="+tc.level) {
				t.Errorf("log %q, want a line at %s", l, tc.level)
			}
		})
	}
}

// The stand-alone chain, Audit outside Recover: a read whose client
// cancelled it while it ran, its handler returning context.Canceled, was
// logged at Error as a failing tool ("tool handler failed"), and recorded
// with no word of the client's leaving, where the Guard says so (9a29c72).
// A handler's own context.Canceled, its client still there, is still a
// failure of the tool's.
func TestReview24bStandaloneCancelledRead(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cancel  bool
		recover bool // a Recover inside Audit
		level   string
		detail  string
	}{
		{"client_gone", true, true, "INFO", "the client went away (the call's context ended) while the tool ran"},
		{"own_cancel", false, true, "ERROR", ""},
		{"client_gone_audit_only", true, false, "", "the client went away (the call's context ended) while the tool ran"},
		{"own_cancel_audit_only", false, false, "", "handler error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink, logs := &memSink{}, &syncBuf{}
			log := slog.New(slog.NewTextHandler(logs, nil))
			au, err := mcpguard.Audit(sink, &mcpguard.Options{Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var rec mcpguard.Middleware
			if tc.recover {
				rec = mcpguard.Recover(log)
			}
			h := mcpguard.Chain(au, rec)(func(hctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if tc.cancel {
					cancel()
					return nil, hctx.Err()
				}
				return nil, context.Canceled
			})
			res, err := h(ctx, req("r", `{}`))
			if got := codeOf(t, res, err); tc.recover && got != "INTERNAL" {
				t.Errorf("answer code %q, want INTERNAL", got)
			}
			evs := sink.all()
			if len(evs) != 1 || evs[0].Code != "INTERNAL" || evs[0].Detail != tc.detail {
				t.Errorf("records %+v, want one INTERNAL of detail %q", evs, tc.detail)
			}
			if l := logs.String(); tc.level != "" && !strings.Contains(l, "level="+tc.level) {
				t.Errorf("log %q, want a line at %s", l, tc.level)
			}
		})
	}
}
