package mcpguard_test

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type review24cParams struct {
	mcp.ParamsBase
	Kind string `json:"kind"`
}

type review24cResult struct {
	mcp.ResultBase
	Data any `json:"data,omitempty"`
}

// review24cNotUTF8 is a value whose MarshalJSON gives bytes that are not
// UTF-8: encoding/json checks that they are JSON, not that they are UTF-8.
type review24cNotUTF8 struct{}

func (review24cNotUTF8) MarshalJSON() ([]byte, error) { return []byte("\"\xfe\""), nil }

// review24cValue is the value a test case puts in a result (nil: none).
func review24cValue(kind string) any {
	switch kind {
	case "deep500":
		return review20Deep(500)
	case "deep1100":
		return review20Deep(1100)
	case "nan":
		return math.NaN()
	case "not_utf8":
		return json.RawMessage("\"\xfe\"")
	case "marshaler_not_utf8":
		return review24cNotUTF8{}
	case "chan":
		return make(chan int)
	case "go_string": // sent as U+FFFD
		return "\xff"
	}
	return nil
}

// review24cConnect connects a go-sdk client, which can call acme/data, to
// h's server as id.
func review24cConnect(t *testing.T, h *harness, id *mcpguard.Identity, version string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := h.srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.auth.mu.Lock()
	h.auth.ids[ss] = id
	h.auth.mu.Unlock()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	if err := mcp.AddSendingCustomMethod[*review24cParams, *review24cResult](c, "acme/data"); err != nil {
		t.Fatal(err)
	}
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs
}

// review24cRefused fails t unless err is the guard's refusal of a
// malformed result (JSON-RPC -32603).
func review24cRefused(t *testing.T, what string, err error) {
	t.Helper()
	we := wireError(err)
	if we == nil || we.Code != jsonrpc.CodeInternalError || !strings.Contains(we.Message, "malformed") {
		t.Errorf("%s: %v, want JSON-RPC error %d (a malformed result)", what, err, jsonrpc.CodeInternalError)
	}
}

// review24cAlive fails t unless the session still takes a tool call.
func review24cAlive(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if err != nil || res.IsError {
		t.Fatalf("the next call on the session: %v %s", err, mustJSON(res))
	}
}

// A method the server added with mcp.AddReceivingCustomMethod answers with
// a result of any type, which the guard passed on unchecked: nested more
// than 1000 levels deep it closed the caller's session (go-sdk v1.8.0's
// client refuses such a message), one the go-sdk cannot encode (NaN, a
// channel) got no answer at all, so the client waited until its deadline,
// and bytes that are not UTF-8 (a json.RawMessage, a MarshalJSON) went
// out as such. The guard now refuses each with a JSON-RPC error -32603, as
// it does a read's, and the session goes on.
func TestReview24cCustomMethodResultChecked(t *testing.T) {
	h := newServerHarness(t, basePolicy(false), nil, func(s *mcp.Server) {
		err := mcp.AddReceivingCustomMethod(s, "acme/data", func(ctx context.Context, _ *mcp.ServerSession, p *review24cParams) (*review24cResult, error) {
			res := &review24cResult{Data: "ok"}
			switch k, ok := strings.CutPrefix(p.Kind, "meta_"); {
			case ok:
				res.Meta = mcp.Meta{"d": review24cValue(k)}
			case review24cValue(p.Kind) != nil:
				res.Data = review24cValue(p.Kind)
			}
			return res, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	type pending struct {
		name, kind string
		pass       bool
		cs         *mcp.ClientSession
		out        <-chan review24cOutcome
	}
	var cases []pending
	for _, v := range protocolVersions {
		for _, tc := range []struct {
			kind string
			pass bool
		}{
			{"ok", true}, {"deep500", true}, {"go_string", true}, {"meta_deep500", true},
			{"deep1100", false}, {"meta_deep1100", false}, {"nan", false}, {"meta_nan", false},
			{"chan", false}, {"not_utf8", false}, {"meta_not_utf8", false}, {"marshaler_not_utf8", false},
		} {
			cs := review24cConnect(t, h, bob, v)
			out := review24cAsync(func(ctx context.Context) (any, error) {
				return mcp.CallCustomMethod[*review24cParams, *review24cResult](ctx, cs, "acme/data", &review24cParams{Kind: tc.kind})
			})
			cases = append(cases, pending{versionName(v) + "/" + tc.kind, tc.kind, tc.pass, cs, out})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := <-c.out
			if c.pass {
				if res, _ := o.res.(*review24cResult); o.err != nil || res == nil || res.Data == nil {
					t.Fatalf("acme/data %s: %v %+v, want its result", c.kind, o.err, o.res)
				}
			} else {
				review24cRefused(t, "acme/data "+c.kind, o.err)
			}
			review24cAlive(t, c.cs)
		})
	}
}

// The lists of the server's prompts, resources and resource templates,
// and the list of its tools, were passed on unchecked: an item's _meta
// nested more than 1000 levels deep closed the session of every caller
// who listed them, a NaN (in a _meta, or a resource's priority) left the
// listing unanswered, and a json.RawMessage that is not UTF-8 went out as
// such; so did a result's own _meta, set below the guard. A prompts/list,
// resources/list or resources/templates/list result that its caller's
// client could not read is now refused with a JSON-RPC error -32603, as a
// resources/read result is. A tool that could not be listed is refused as
// one with a bad schema is: it is not listed, and a call to it is
// TOOL_NOT_FOUND (here the go-sdk's error for a tool it does not have). A _meta nested 500 levels deep still passes.
func TestReview24cListResultsChecked(t *testing.T) {
	type lister func(context.Context, *mcp.ClientSession) (any, error)
	lists := map[string]lister{
		"tools/list": func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
			return cs.ListTools(ctx, nil)
		},
		"prompts/list": func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
			return cs.ListPrompts(ctx, nil)
		},
		"resources/list": func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
			return cs.ListResources(ctx, nil)
		},
		"resources/templates/list": func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
			return cs.ListResourceTemplates(ctx, nil)
		},
	}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	// A schema with v in it. The go-sdk's AddTool refuses a schema nested
	// beyond 1000 levels, or that does not encode (NaN); one nested 995
	// levels is still too deep in a listing.
	schema := func(v any) json.RawMessage {
		raw, _ := v.(json.RawMessage)
		if len(raw) == 2200 {
			raw = review20Deep(995)
		}
		return json.RawMessage(`{"type":"object","x-d":` + string(raw) + `}`)
	}
	none := func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) { return nil, nil }
	// Each case adds one item (or sets a result's _meta) on a server of
	// its own; tool adds its tool after Install, as a server may.
	type item struct {
		method string
		before func(s *mcp.Server, v any)
		tool   func(v any) *mcp.Tool
	}
	var armed sync.Map // of *mcp.Server: the result_meta middleware sets the _meta (after Install)
	items := map[string]item{
		"tool_meta": {method: "tools/list", tool: func(v any) *mcp.Tool {
			return &mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: ro, Meta: mcp.Meta{"d": v}}
		}},
		"tool_schema": {method: "tools/list", tool: func(v any) *mcp.Tool {
			return &mcp.Tool{Name: "late", InputSchema: schema(v), Annotations: ro}
		}},
		"tool_output_schema": {method: "tools/list", tool: func(v any) *mcp.Tool {
			return &mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: schema(v), Annotations: ro}
		}},
		"prompt_meta": {method: "prompts/list", before: func(s *mcp.Server, v any) {
			s.AddPrompt(&mcp.Prompt{Name: "p", Meta: mcp.Meta{"d": v}}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) { return nil, nil })
		}},
		"resource_meta": {method: "resources/list", before: func(s *mcp.Server, v any) {
			s.AddResource(&mcp.Resource{URI: "file:///r", Name: "r", Meta: mcp.Meta{"d": v}}, none)
		}},
		"resource_priority": {method: "resources/list", before: func(s *mcp.Server, v any) {
			p, _ := v.(float64)
			s.AddResource(&mcp.Resource{URI: "file:///r", Name: "r", Annotations: &mcp.Annotations{Priority: p}}, none)
		}},
		"template_meta": {method: "resources/templates/list", before: func(s *mcp.Server, v any) {
			s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///t/{x}", Name: "t", Meta: mcp.Meta{"d": v}}, none)
		}},
		"template_priority": {method: "resources/templates/list", before: func(s *mcp.Server, v any) {
			p, _ := v.(float64)
			s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///t/{x}", Name: "t", Annotations: &mcp.Annotations{Priority: p}}, none)
		}},
	}
	// A result's own _meta, set by a middleware below the guard.
	for m := range lists {
		items["result_meta:"+m] = item{method: m, before: func(s *mcp.Server, v any) {
			s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					res, err := next(ctx, method, req)
					if _, ok := armed.Load(s); ok && method == m && err == nil && res != nil {
						res.SetMeta(map[string]any{"d": v})
					}
					return res, err
				}
			})
		}}
	}
	type pending struct {
		name, method, kind string
		tool               bool
		cs                 *mcp.ClientSession
		out                <-chan review24cOutcome
	}
	var cases []pending
	cfg := basePolicy(false)
	cfg.Tools = append(cfg.Tools, policy.ToolRule{Name: "late", Class: policy.Read})
	for _, name := range slices.Sorted(maps.Keys(items)) {
		it := items[name]
		for _, kind := range []string{"deep500", "deep1100", "nan", "not_utf8"} {
			if strings.HasSuffix(name, "_priority") && kind != "nan" || strings.HasSuffix(name, "_schema") && kind == "nan" {
				continue
			}
			v := review24cValue(kind)
			h := newServerHarness(t, cfg, nil, func(s *mcp.Server) {
				if it.before != nil {
					it.before(s, v)
				}
			})
			armed.Store(h.srv, true)
			if it.tool != nil {
				h.srv.AddTool(it.tool(v), func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return textResult("late"), nil
				})
			}
			for _, ver := range protocolVersions {
				cs := h.connect(bob, clientOpts{version: ver})
				out := review24cAsync(func(ctx context.Context) (any, error) { return lists[it.method](ctx, cs) })
				cases = append(cases, pending{name + "/" + kind + "/" + versionName(ver), it.method, kind, it.tool != nil, cs, out})
			}
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := <-c.out
			switch {
			case c.kind == "deep500":
				if o.err != nil {
					t.Fatalf("%s: %v, want its result", c.method, o.err)
				}
			case c.tool:
				if o.err != nil {
					t.Fatalf("%s: %v, want the tools but the one it could not list", c.method, o.err)
				}
				if lr := o.res.(*mcp.ListToolsResult); slices.ContainsFunc(lr.Tools, func(t *mcp.Tool) bool { return t.Name == "late" }) {
					t.Errorf("%s listed the tool it could not send", c.method)
				}
				// Answered as a name the server does not have.
				r, err := call(t, c.cs, "late", map[string]any{})
				if we := wireError(err); we == nil || we.Code != jsonrpc.CodeInvalidParams || we.Message != `unknown tool "late"` {
					t.Errorf("a call to the tool: %v %s, want the go-sdk's unknown tool error", err, mustJSON(r))
				}
			default:
				review24cRefused(t, c.method, o.err)
			}
			review24cAlive(t, c.cs)
		})
	}
}

// A review24cOutcome is what a request got.
type review24cOutcome struct {
	res any
	err error
}

// review24cAsync makes a request with f at once, with a deadline of 2 s:
// the cases that get no answer wait together, not one after another.
func review24cAsync(f func(context.Context) (any, error)) <-chan review24cOutcome {
	out := make(chan review24cOutcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		res, err := f(ctx)
		out <- review24cOutcome{res, err}
	}()
	return out
}

// BenchmarkReview24cCustomMethod times a round trip of a method the server
// added, whose result (100 strings, about 4 KB) the guard encodes once to
// check it, over in-memory transports: bare (no guard) and guarded.
func BenchmarkReview24cCustomMethod(b *testing.B) {
	hits := make([]string, 100)
	for i := range hits {
		hits[i] = strings.Repeat("x", 40)
	}
	for _, guarded := range []bool{false, true} {
		name := "bare"
		if guarded {
			name = "guarded"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
			err := mcp.AddReceivingCustomMethod(srv, "acme/data", func(context.Context, *mcp.ServerSession, *review24cParams) (*review24cResult, error) {
				return &review24cResult{Data: hits}, nil
			})
			if err != nil {
				b.Fatal(err)
			}
			auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
			if guarded {
				pol, err := policy.New(policy.Config{})
				if err != nil {
					b.Fatal(err)
				}
				g, err := mcpguard.New(pol, auth, &mcpguard.Options{Logger: quiet})
				if err != nil {
					b.Fatal(err)
				}
				if err := g.Install(srv); err != nil {
					b.Fatal(err)
				}
			}
			ct, st := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(ctx, st, nil)
			if err != nil {
				b.Fatal(err)
			}
			auth.ids[ss] = bob
			c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
			if err := mcp.AddSendingCustomMethod[*review24cParams, *review24cResult](c, "acme/data"); err != nil {
				b.Fatal(err)
			}
			cs, err := c.Connect(ctx, ct, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { cs.Close(); ss.Close() }()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := mcp.CallCustomMethod[*review24cParams, *review24cResult](ctx, cs, "acme/data", &review24cParams{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Wrap (and so AddTool) took a tool that could not be listed (its _meta
// nested too deep, not encodable, or not UTF-8 once encoded), whose
// listing the go-sdk then sent to every caller of tools/list, or failed to
// send. It is now refused as one with a bad schema is, and Install refuses
// one nested 600 levels deep (which its own listing reads). (Install learns
// a server's tools through a client, which reads bytes that are not UTF-8
// as U+FFFD: such a tool is refused at the guard's first listing of the
// server's own, see TestReview24cListResultsChecked.)
func TestReview24cUnlistableToolRefused(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "x", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, &sessionAuth{}, &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("x"), nil }
	for _, kind := range []string{"deep500", "deep1100", "nan", "chan", "not_utf8", "marshaler_not_utf8"} {
		t.Run(kind, func(t *testing.T) {
			tool := &mcp.Tool{Name: "x", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
				Meta: mcp.Meta{"d": review24cValue(kind)}}
			_, err := g.Wrap(tool, handler)
			if ok := kind == "deep500"; ok != (err == nil) || !ok && !strings.Contains(err.Error(), "cannot be listed") {
				t.Errorf("Wrap: %v, want an error %v (cannot be listed)", err, !ok)
			}
		})
	}
	t.Run("install_deep600", func(t *testing.T) {
		g, err := mcpguard.New(pol, &sessionAuth{}, &mcpguard.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		srv.AddTool(&mcp.Tool{Name: "x", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
			Meta: mcp.Meta{"d": review20Deep(600)}}, handler)
		if err := g.Install(srv); err == nil || !strings.Contains(err.Error(), "cannot be listed") {
			t.Errorf("Install: %v, want an error (cannot be listed)", err)
		}
	})
}
