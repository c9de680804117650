package mcpguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review25kLoud is a panic value whose text panics with itself: fmt
// recovers a String method's panic and prints the value it panicked with,
// but re-panics when that one's String panics too.
type review25kLoud struct{}

func (review25kLoud) String() string { panic(review25kLoud{}) }

// review25kLoudErr is review25kLoud as an error.
type review25kLoudErr struct{}

func (review25kLoudErr) Error() string { panic(review25kLoudErr{}) }

// review25kLog is a slog.Logger whose records a test reads.
type review25kLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *review25kLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *review25kLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// review25kHarness is newServerHarness with log as the guard's Logger.
func review25kHarness(t *testing.T, log *review25kLog, sopts *mcp.ServerOptions, before func(*mcp.Server)) *harness {
	t.Helper()
	h := &harness{t: t, auth: &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}, sink: &memSink{}, down: &spy{}}
	h.srv = mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, sopts)
	addTools(h.srv, h.down)
	if before != nil {
		before(h.srv)
	}
	pol, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	lg := slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.g, err = mcpguard.New(pol, h.auth, &mcpguard.Options{Audit: h.sink, Confirmer: testSigner(t, nil), Logger: lg})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.g.Install(h.srv); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestReview25kPanicValueWhoseTextPanics: a handler that panics with a
// value whose String (or Error) method panics with such a value again is
// refused and logged as any panic is. fmt re-panics on the second one, and
// the guard's fmt.Sprint of the panic value, in the deferred function that
// had recovered the first panic, panicked: the process ended, through
// Install (a prompt's handler, a tool's) and through Recover and Wrap.
func TestReview25kPanicValueWhoseTextPanics(t *testing.T) {
	for _, v := range []any{review25kLoud{}, review25kLoudErr{}} {
		log := &review25kLog{}
		h := review25kHarness(t, log, nil, func(s *mcp.Server) {
			s.AddPrompt(&mcp.Prompt{Name: "boom"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				panic(v)
			})
		})
		cs := review24cConnect(t, h, bob, "")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "boom"})
		cancel()
		review24cRefused(t, "prompts/get", err)
		review24cAlive(t, cs)
		if !strings.Contains(log.String(), `"stack"`) {
			t.Errorf("log %s: want the panic's stack", log.String())
		}

		// A tool's handler, under Wrap and under Recover.
		pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "tool", Class: policy.Read}}})
		if err != nil {
			t.Fatal(err)
		}
		g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		tool := &mcp.Tool{Name: "tool", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
		boom := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { panic(v) }
		wrapped, err := g.Wrap(tool, boom)
		if err != nil {
			t.Fatal(err)
		}
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "tool", Arguments: json.RawMessage(`{}`)}}
		if res, err := wrapped(context.Background(), req); err != nil || res == nil || !res.IsError {
			t.Errorf("Wrap: %v %s, want a tool error", err, mustJSON(res))
		}
		if res, err := mcpguard.Recover(quiet)(boom)(context.Background(), req); err != nil || res == nil || !res.IsError {
			t.Errorf("Recover: %v %s, want a tool error", err, mustJSON(res))
		}
	}
}

// TestReview25kListenSubscribeHandlerPanics: a SubscribeHandler that
// panics is refused with -32603 on subscriptions/listen (go-sdk v1.8.0
// calls it for each URI the listen names) as on resources/subscribe, and
// the session goes on; it ended the process.
func TestReview25kListenSubscribeHandlerPanics(t *testing.T) {
	log := &review25kLog{}
	sopts := &mcp.ServerOptions{
		SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error {
			panic("review25k: subscribe")
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	}
	h := review25kHarness(t, log, sopts, func(s *mcp.Server) {
		s.AddResource(&mcp.Resource{URI: "file:///a", Name: "a"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{Text: "a"}}}, nil
		})
	})
	r := h.rawConnect(bob)
	for _, c := range []struct{ method, params string }{
		{"resources/subscribe", `{"uri":"file:///a"}`},
		{"subscriptions/listen", `{"notifications":{"resourceSubscriptions":["file:///a"]}}`},
	} {
		_, we := r.call(c.method, c.params)
		if we == nil || we.Code != jsonrpc.CodeInternalError {
			t.Errorf("%s: %v, want JSON-RPC error %d", c.method, we, jsonrpc.CodeInternalError)
		}
	}
	if _, we := r.call("tools/call", `{"name":"echo","arguments":{"text":"x"}}`); we != nil {
		t.Errorf("the next call on the session: %v", we)
	}
	if got := strings.Count(log.String(), "review25k: subscribe"); got != 2 {
		t.Errorf("log %s: want each panic logged", log.String())
	}
}

// TestReview25kListPanics: a panic below the guard while the go-sdk lists
// the server's tools or resources (a SetCacheable of the server's, which
// the go-sdk calls on every listing, or a middleware below the guard) is
// refused with -32603 and logged, as one on prompts/list was, and the
// session goes on: on tools/list and resources/list, and on the requests
// the guard lists the tools for (resources/subscribe, a tools/call whose
// registry is due), it ended the process.
func TestReview25kListPanics(t *testing.T) {
	var boom atomic.Pointer[string] // the method to panic on, when set
	sopts := &mcp.ServerOptions{
		SetCacheable: func(_ context.Context, req mcp.Request, _ *mcp.Cacheable) {
			if m := boom.Load(); m != nil && *m == "cacheable" {
				panic("review25k: SetCacheable")
			}
		},
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	}
	log := &review25kLog{}
	h := review25kHarness(t, log, sopts, func(s *mcp.Server) {
		s.AddResource(&mcp.Resource{URI: "file:///a", Name: "a"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{Text: "a"}}}, nil
		})
		s.AddPrompt(&mcp.Prompt{Name: "p"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if m := boom.Load(); m != nil && *m == method {
					panic("review25k: middleware")
				}
				return next(ctx, method, req)
			}
		})
	})
	r := h.rawConnect(bob)
	for _, c := range []struct{ on, method, params string }{
		{"cacheable", "tools/list", `{}`},
		{"cacheable", "resources/list", `{}`},
		{"cacheable", "prompts/list", `{}`},
		{"cacheable", "resources/subscribe", `{"uri":"file:///a"}`},
		{"tools/list", "tools/list", `{}`},
		{"resources/list", "resources/list", `{}`},
		{"tools/list", "resources/subscribe", `{"uri":"file:///a"}`},
		{"tools/list", "subscriptions/listen", `{"notifications":{"toolsListChanged":true}}`},
	} {
		on := c.on
		boom.Store(&on)
		_, we := r.call(c.method, c.params)
		boom.Store(nil)
		if we == nil || we.Code != jsonrpc.CodeInternalError {
			t.Errorf("%s panicking on %s: %v, want JSON-RPC error %d", c.method, c.on, we, jsonrpc.CodeInternalError)
		}
		if _, we := r.call("tools/call", `{"name":"echo","arguments":{"text":"x"}}`); we != nil {
			t.Errorf("after %s: the next call on the session: %v", c.method, we)
		}
	}
	if strings.Count(log.String(), `"level":"ERROR","msg":"mcpguard: result refused"`) < 8 {
		t.Errorf("log %s: want each panic logged at Error", log.String())
	}

	// A tools/call whose registry is stale (a tool was added) lists the
	// tools first: a listing that panics is one that failed, and the call
	// is TOOL_NOT_FOUND, recorded as such, as after any failed listing.
	h.srv.AddTool(&mcp.Tool{Name: "review25k_due", InputSchema: json.RawMessage(`{"type":"object"}`)}, okTool)
	time.Sleep(100 * time.Millisecond) // the go-sdk's notification, which marks the registry due
	on := "tools/list"
	boom.Store(&on)
	before := strings.Count(log.String(), "review25k: middleware")
	res, we := r.call("tools/call", `{"name":"echo","arguments":{"text":"x"}}`)
	boom.Store(nil)
	if we == nil || we.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("tools/call whose registry's listing panics: %v %s, want TOOL_NOT_FOUND", we, res)
	}
	if evs := h.sink.all(); len(evs) == 0 || evs[len(evs)-1].Code != string(mcpguard.CodeToolNotFound) {
		t.Errorf("records %+v: want the call's TOOL_NOT_FOUND", evs)
	}
	if strings.Count(log.String(), "review25k: middleware") == before {
		t.Error("the registry's listing did not panic: the test tests nothing")
	}
}

// TestReview25kPanicLogged: a handler's panic is logged to
// [Options].Logger at Error with its stack and its value (control
// characters quoted, a long one cut), never the request's arguments; the
// client is told neither. A panic(nil) is refused so too.
func TestReview25kPanicLogged(t *testing.T) {
	var val atomic.Value
	log := &review25kLog{}
	h := review25kHarness(t, log, nil, func(s *mcp.Server) {
		s.AddPrompt(&mcp.Prompt{Name: "boom", Arguments: []*mcp.PromptArgument{{Name: "x"}}}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			panic(val.Load().(func() any)())
		})
	})
	cs := review24cConnect(t, h, bob, "")
	for _, v := range []func() any{
		func() any { return "line1\nFAKE level=ERROR\x1b[31m" },
		func() any { return strings.Repeat("A", 1<<20) },
		func() any { return nil },
	} {
		val.Store(v)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "boom", Arguments: map[string]string{"x": "argsecret-25k"}})
		cancel()
		review24cRefused(t, "prompts/get", err)
		if strings.Contains(err.Error(), "line1") || strings.Contains(err.Error(), "AAAA") || strings.Contains(err.Error(), "goroutine") {
			t.Errorf("the client was told %v", err)
		}
	}
	review24cAlive(t, cs)
	out := log.String()
	if strings.Contains(out, "argsecret-25k") {
		t.Errorf("the log holds the request's arguments: %s", out)
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, strings.Repeat("A", 1<<16)) {
		t.Error("the log holds the panic value's control characters, or all of a long one")
	}
	if n := strings.Count(out, `"level":"ERROR","msg":"mcpguard: result refused"`); n != 3 || strings.Count(out, `"stack":"goroutine`) != 3 {
		t.Errorf("%d records at Error; want 3, each with its stack:\n%.2000s", n, out)
	}
	if !strings.Contains(out, "PanicNilError") && !strings.Contains(out, "panic called with nil") {
		t.Errorf("the panic(nil) is not told: %.3000s", out)
	}
}

// TestReview25kListChangedListingPanics: the guard lists the tools to
// decide whether a tools/list_changed notification reaches a session; a
// panic in that listing (a SetCacheable of the server's) is a listing that
// failed, so no notification, and the session goes on. It ended the
// process, from the goroutine that sent the notification.
func TestReview25kListChangedListingPanics(t *testing.T) {
	var boom atomic.Bool
	sopts := &mcp.ServerOptions{
		SetCacheable: func(context.Context, mcp.Request, *mcp.Cacheable) {
			if boom.Load() {
				panic("review25k: SetCacheable")
			}
		},
	}
	log := &review25kLog{}
	h := review25kHarness(t, log, sopts, nil)
	r := h.rawConnect(bob)
	if _, we := r.call("tools/list", `{}`); we != nil {
		t.Fatal(we)
	}
	boom.Store(true)
	h.srv.AddTool(&mcp.Tool{Name: "review25k_new", InputSchema: json.RawMessage(`{"type":"object"}`)}, okTool)
	deadline := time.Now().Add(3 * time.Second)
	for !strings.Contains(log.String(), "review25k: SetCacheable") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	boom.Store(false)
	if !strings.Contains(log.String(), "review25k: SetCacheable") {
		t.Errorf("log %s: want the listing's panic", log.String())
	}
	if _, we := r.call("tools/call", `{"name":"echo","arguments":{"text":"x"}}`); we != nil {
		t.Errorf("the next call on the session: %v", we)
	}
}
