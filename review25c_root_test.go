package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review25cIsErr is an error type whose Is method reads its receiver, as
// most do: a nil one panics when errors.Is asks it.
type review25cIsErr struct{ code int }

func (e *review25cIsErr) Error() string { return "is error" }

func (e *review25cIsErr) Is(target error) bool { return e.code == 42 && target != nil }

// review25cErrors are handler errors that are no nil pointer, whose text
// reads without a panic, and whose first *jsonrpc.Error (if any) is not
// nil, yet go-sdk v1.8.0 panics answering with each, after every
// middleware: its jsonrpc2 asks errors.Is(err, ErrNotHandled) and
// errors.Is(err, ErrMethodNotFound), which call the Is method of every
// error in the tree, a nil *jsonrpc.Error's or a nil *T's included.
var review25cErrors = map[string]error{
	"wrapped_nil_is":     fmt.Errorf("reading: %w", (*review25cIsErr)(nil)),
	"wire_then_nil_wire": fmt.Errorf("%w: %w", &jsonrpc.Error{Code: 1234, Message: "busy"}, (*jsonrpc.Error)(nil)),
}

// Each is refused as a malformed answer (-32603), as the errors of
// TestReview25bNilErrorRefused are, and the session goes on.
func TestReview25cErrorIsPanicRefused(t *testing.T) {
	h := newServerHarness(t, basePolicy(false), nil, func(s *mcp.Server) {
		for kind, err := range review25cErrors {
			s.AddPrompt(&mcp.Prompt{Name: kind}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return nil, err
			})
		}
	})
	for _, v := range protocolVersions {
		for kind := range review25cErrors {
			t.Run(versionName(v)+"/"+kind, func(t *testing.T) {
				cs := review24cConnect(t, h, bob, v)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: kind})
				review24cRefused(t, "prompts/get "+kind, err)
				review24cAlive(t, cs)
			})
		}
	}
}

// review25cGuarded is a server with the test tools and add's, guarded with
// opts (its Audit and Logger filled in: the log is returned).
func review25cGuarded(t *testing.T, opts mcpguard.Options, add func(*mcp.Server)) (*harness, *syncBuffer) {
	t.Helper()
	h := &harness{t: t, auth: &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}, sink: &memSink{}, down: &spy{}}
	h.srv = mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	addTools(h.srv, h.down)
	add(h.srv)
	cfg := basePolicy(false)
	cfg.Tools = append(cfg.Tools, policy.ToolRule{Name: "ask", Class: policy.Read})
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	opts.Audit, opts.Logger, opts.Confirmer = h.sink, slog.New(slog.NewTextHandler(logs, nil)), testSigner(t, nil)
	if h.g, err = mcpguard.New(pol, h.auth, &opts); err != nil {
		t.Fatal(err)
	}
	if err := h.g.Install(h.srv); err != nil {
		t.Fatal(err)
	}
	return h, logs
}

// On protocol 2025-11-25 the go-sdk asks the client a tool's input
// requests itself, below the guard; one it panicked encoding is failed by
// the guard's sending middleware (a6dc466). What that send had started is
// not left behind: the call is recorded once, refused, its in-flight slot
// (a cap of 1) is given back, and a well-formed sampling request then
// reaches the client on the same session and the call completes. The
// refusal the client gets carried a correlation id of its own, found in no
// audit record (the call's record had another): it is now the call's.
func TestReview25cSendPanicLeavesNothing(t *testing.T) {
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := review25cGuarded(t, mcpguard.Options{Limiter: lim}, func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if req.Params.InputResponses != nil {
					return textResult("answered"), nil
				}
				var content mcp.Content = &mcp.TextContent{Text: "hi"}
				if string(req.Params.Arguments) == `{"kind":"bad"}` {
					content = (*mcp.TextContent)(nil)
				}
				//lint:ignore SA1019 an input request of any kind a handler may return
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"s": &mcp.CreateMessageParams{MaxTokens: 1, Messages: []*mcp.SamplingMessage{{Role: "user", Content: content}}}}}, nil
			})
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := h.srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.auth.mu.Lock()
	h.auth.ids[ss] = bob
	h.auth.mu.Unlock()
	var asked atomic.Int64
	copts := &mcp.ClientOptions{}
	//lint:ignore SA1019 the input request the go-sdk fulfils on protocol 2025-11-25
	copts.CreateMessageHandler = func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		asked.Add(1)
		//lint:ignore SA1019 as above
		return &mcp.CreateMessageResult{Content: &mcp.TextContent{Text: "ok"}, Model: "m", Role: "assistant"}, nil
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, copts)
	cs, err := c.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var told []string // the correlation ids the client was told
	for i := range 3 {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"kind": "bad"}})
		we := wireError(err)
		var body struct {
			Code          string `json:"code"`
			CorrelationID string `json:"correlation_id"`
		}
		if we == nil || json.Unmarshal(we.Data, &body) != nil || body.Code != "INVALID_RESPONSE" {
			t.Fatalf("ask bad #%d: %v, want a JSON-RPC refusal INVALID_RESPONSE", i, err)
		}
		told = append(told, body.CorrelationID)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"kind": "good"}})
	if err != nil || res.IsError {
		t.Fatalf("ask good: %v %s", err, mustJSON(res))
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the client was asked %d times, want 1", n)
	}
	var recs []audit.Event
	for _, e := range h.sink.all() {
		if e.Tool == "ask" {
			recs = append(recs, e)
		}
	}
	if len(recs) != 4 || recs[0].Allowed || recs[1].Allowed || recs[2].Allowed || !recs[3].Allowed {
		t.Fatalf("records %+v, want 3 refusals then 1 allowed", recs)
	}
	// The refusal the client was told names the call's record.
	for i, id := range told {
		if id != recs[i].CorrelationID {
			t.Errorf("ask bad #%d: the client was told correlation id %q, the call's record has %q", i, id, recs[i].CorrelationID)
		}
	}
}

// A resource handler's own panic is recovered by the guard (a6dc466)
// rather than ending the process, which printed its stack: the log line
// must carry the stack, as a tool handler's panic's does, or where it
// happened is lost.
func TestReview25cReadPanicLogged(t *testing.T) {
	h, logs := review25cGuarded(t, mcpguard.Options{}, func(s *mcp.Server) {
		s.AddResource(&mcp.Resource{URI: "file:///boom", Name: "boom"}, review25cBoom)
	})
	cs := review24cConnect(t, h, bob, "")
	_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file:///boom"})
	if wireError(err) == nil {
		t.Fatalf("resources/read boom: %v, want a JSON-RPC error", err)
	}
	review24cAlive(t, cs)
	out := logs.String()
	if !strings.Contains(out, "review25cBoom") {
		t.Errorf("the log does not name the panicking handler (no stack):\n%s", out)
	}
}

func review25cBoom(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	panic("review25c: the resource handler failed")
}

// ValidateOutput, step 11 as a stand-alone middleware, checked only a
// result's structured content: a content block that is nil or a nil
// pointer, or one whose MarshalJSON panics (a *mcp.ToolResultContent
// holding a nil block), passed it, and go-sdk v1.8.0 then panicked
// encoding the answer after every middleware, ending the process (a nil
// one it sent as null, which its client cannot read). The Guard's step 11
// refuses each (TestReview25NilContentBlockRefused); ValidateOutput now
// does too, as INVALID_RESPONSE, and a server whose chain has it serves on.
func TestReview25cValidateOutputContentBlocks(t *testing.T) {
	v, err := mcpguard.NewOutputValidator(json.RawMessage(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]mcp.Content{"nested_nil": review25bNestedNil()}
	for kind, c := range review25Blocks {
		blocks[kind] = c
	}
	handler := func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct{ Kind string }
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return nil, err
		}
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}, StructuredContent: map[string]any{}}
		if args.Kind != "" {
			res.Content = append(res.Content, blocks[args.Kind])
		}
		return res, nil
	}
	h := mcpguard.Chain(mcpguard.Recover(quiet), mcpguard.ValidateOutput(v))(handler)
	for kind := range blocks {
		t.Run(kind, func(t *testing.T) {
			req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t", Arguments: json.RawMessage(`{"kind":"` + kind + `"}`)}}
			res, err := h(context.Background(), req)
			if code := errorCode(t, res); err != nil || code != string(mcpguard.CodeInvalidResponse) {
				t.Fatalf("ValidateOutput of a %s block: %v, code %q, want INVALID_RESPONSE", kind, err, code)
			}
		})
	}
	// End to end: the server answers and serves on.
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}, h)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cs.Close(); ss.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t", Arguments: map[string]any{"kind": "nil_text"}})
	if err != nil || errorCode(t, res) != string(mcpguard.CodeInvalidResponse) {
		t.Fatalf("nil_text through a server: %v %s, want INVALID_RESPONSE", err, mustJSON(res))
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Errorf("the next call: %v %s", err, mustJSON(res))
	}
}
