package mcpguard_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rv63cRan records which handlers ran, as whom.
type rv63cRan struct {
	mu  sync.Mutex
	ran []string
}

func (r *rv63cRan) add(ctx context.Context, name string) {
	who := "<nobody>"
	if p := mcpguard.PrincipalFromContext(ctx); p != nil {
		who = p.Subject
	}
	r.mu.Lock()
	r.ran = append(r.ran, name+":"+who)
	r.mu.Unlock()
}

func (r *rv63cRan) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ran)
}

type rv63cIn struct {
	X string `json:"x,omitempty"`
}

func rv63cAddRaw(s *mcp.Server, r *rv63cRan, name string) {
	s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r.add(ctx, name)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
}

func rv63cAddTyped(s *mcp.Server, r *rv63cRan, name string) {
	mcp.AddTool(s, &mcp.Tool{Name: name},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ rv63cIn) (*mcp.CallToolResult, any, error) {
			r.add(ctx, name)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
}

// rv63cMixedServer: a server with tools added before Install (typed and raw),
// a resource and a prompt, guarded; then tools added after Install.
func rv63cMixedServer(t *testing.T, r *rv63cRan, sink *memSink, auth *sessionAuth) *mcp.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "mixed", Version: "1"}, nil)
	rv63cAddTyped(s, r, "get_a")
	rv63cAddRaw(s, r, "get_b")
	rv63cAddTyped(s, r, "write_a")
	rv63cAddRaw(s, r, "write_b")
	rv63cAddRaw(s, r, "admin_a")
	s.AddResource(&mcp.Resource{URI: "file:///notes.txt", Name: "notes"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			r.add(ctx, "resource")
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "secret"}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet"},
		func(ctx context.Context, _ *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			r.add(ctx, "prompt")
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
		})
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "get_a", Class: policy.Read},
			{Name: "get_b", Class: policy.Read},
			{Name: "write_a", Class: policy.Write},
			{Name: "write_b", Class: policy.Write},
			{Name: "admin_a", Class: policy.Read},
			{Name: "late_get_typed", Class: policy.Read},
			{Name: "late_get_raw", Class: policy.Read},
			{Name: "late_write_typed", Class: policy.Write},
			{Name: "late_write_raw", Class: policy.Write},
			{Name: "admin_late_typed", Class: policy.Read},
			{Name: "admin_late_raw", Class: policy.Read},
		},
		RoleRules: []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Audit: sink, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func rv63cNames(ts []*mcp.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	sort.Strings(out)
	return out
}

// TestReview63cLateTools: tools added after Install, typed and raw, with and
// without rules, are guarded as the early ones are: a viewer never runs a
// write off the allowlist, never sees or can tell an admin tool from an
// unknown one, and an unauthenticated client gets nothing at all.
func TestReview63cLateTools(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			ctx := context.Background()
			r := &rv63cRan{}
			sink := &memSink{}
			auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
			s := rv63cMixedServer(t, r, sink, auth)

			connect := func(id *mcpguard.Identity) *mcp.ClientSession {
				changed := make(chan struct{}, 16)
				return rv63cConnectAs(t, s, auth, id, v, &mcp.ClientOptions{
					ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
				})
			}
			viewer := connect(&mcpguard.Identity{Principal: &policy.Principal{Subject: "vic", Roles: []string{"viewer"}}})
			stranger := connect(nil)
			// Both list once, so that the guard knows them.
			viewer.ListTools(ctx, nil)
			stranger.ListTools(ctx, nil)

			rv63cAddTyped(s, r, "late_get_typed")
			rv63cAddRaw(s, r, "late_get_raw")
			rv63cAddTyped(s, r, "late_write_typed")
			rv63cAddRaw(s, r, "late_write_raw")
			rv63cAddTyped(s, r, "admin_late_typed")
			rv63cAddRaw(s, r, "admin_late_raw")
			rv63cAddTyped(s, r, "late_norule_typed")
			rv63cAddRaw(s, r, "late_norule_raw")

			lt, err := viewer.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := rv63cNames(lt.Tools)
			t.Logf("viewer lists %v", got)
			for _, n := range got {
				if n == "admin_a" || n == "admin_late_typed" || n == "admin_late_raw" {
					t.Errorf("viewer lists hidden %s", n)
				}
			}
			if lt, err := stranger.ListTools(ctx, nil); err == nil {
				t.Errorf("stranger lists %v", rv63cNames(lt.Tools))
			}

			_, unknownErr := viewer.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
			if unknownErr == nil {
				t.Fatal("unknown tool answered")
			}
			for _, name := range []string{"admin_a", "admin_late_typed", "admin_late_raw", "late_norule_typed", "late_norule_raw"} {
				_, err := viewer.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
				want := strings.ReplaceAll(unknownErr.Error(), "no_such_tool", name)
				if err == nil || err.Error() != want {
					t.Errorf("viewer calls %s: %v, want %q", name, err, want)
				}
			}
			for _, name := range []string{"write_a", "write_b", "late_write_typed", "late_write_raw"} {
				res, err := viewer.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
				d, ok := mcpguard.DenialOf(res, err)
				if !ok || d.Code != mcpguard.CodeWriteNotAllowed {
					t.Errorf("viewer calls %s: %v %v, want WRITE_NOT_ALLOWED", name, d, err)
				}
			}
			for _, name := range []string{"get_a", "get_b", "late_get_typed", "late_get_raw", "admin_late_raw", "late_norule_raw"} {
				res, err := stranger.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
				d, ok := mcpguard.DenialOf(res, err)
				if !ok || d.Code != mcpguard.CodeUnauthenticated {
					t.Errorf("stranger calls %s: %v %v, want UNAUTHENTICATED", name, d, err)
				}
			}
			if _, err := stranger.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///notes.txt"}); err == nil {
				t.Error("stranger read the resource")
			}
			if _, err := stranger.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet"}); err == nil {
				t.Error("stranger got the prompt")
			}
			if _, err := stranger.ListResources(ctx, nil); err == nil {
				t.Error("stranger listed resources")
			}
			if _, err := stranger.ListPrompts(ctx, nil); err == nil {
				t.Error("stranger listed prompts")
			}
			for _, name := range []string{"get_a", "get_b", "late_get_typed", "late_get_raw"} {
				res, err := viewer.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
				if err != nil || res.IsError {
					t.Errorf("viewer calls %s: %v %v", name, res, err)
				}
			}
			for _, x := range r.all() {
				if x != "get_a:vic" && x != "get_b:vic" && x != "late_get_typed:vic" && x != "late_get_raw:vic" {
					t.Errorf("ran %s", x)
				}
			}
			// Every tools/call decision has an outcome record.
			outcomes := 0
			for _, e := range sink.all() {
				if e.Phase == "outcome" {
					outcomes++
				}
			}
			if want := 5 + 4 + 6 + 4 + 1; outcomes != want {
				t.Errorf("%d outcome records, want %d (one per call)", outcomes, want)
				for _, e := range sink.all() {
					t.Logf("  %s %q %q allowed=%v code=%s", e.Phase, e.Subject, e.Tool, e.Allowed, e.Code)
				}
			}
		})
	}
}

// TestReview63cStrangerOtherMethods: a client without an identity gets none
// of the server's completions, templates or subscriptions under Install.
func TestReview63cStrangerOtherMethods(t *testing.T) {
	ctx := context.Background()
	r := &rv63cRan{}
	s := mcp.NewServer(&mcp.Implementation{Name: "o", Version: "1"}, &mcp.ServerOptions{
		CompletionHandler: func(ctx context.Context, _ *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			r.add(ctx, "complete")
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"secret"}}}, nil
		},
		SubscribeHandler: func(ctx context.Context, _ *mcp.SubscribeRequest) error {
			r.add(ctx, "subscribe")
			return nil
		},
		UnsubscribeHandler: func(ctx context.Context, _ *mcp.UnsubscribeRequest) error {
			r.add(ctx, "unsubscribe")
			return nil
		},
	})
	rv63cAddRaw(s, r, "get_a")
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///docs/{name}", Name: "docs"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			r.add(ctx, "template")
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "p", Arguments: []*mcp.PromptArgument{{Name: "a"}}},
		func(ctx context.Context, _ *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			r.add(ctx, "prompt")
			return &mcp.GetPromptResult{}, nil
		})
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "get_a", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Audit: &memSink{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(s); err != nil {
		t.Fatal(err)
	}
	for _, v := range protocolVersions {
		cs := connectVersion(t, s, nil, v)
		if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "p"}, Argument: mcp.CompleteParamsArgument{Name: "a", Value: ""}}); err == nil {
			t.Errorf("%s: stranger completed", versionName(v))
		}
		if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "file:///docs/{name}"}, Argument: mcp.CompleteParamsArgument{Name: "name", Value: ""}}); err == nil {
			t.Errorf("%s: stranger completed a resource", versionName(v))
		}
		if _, err := cs.ListResourceTemplates(ctx, nil); err == nil {
			t.Errorf("%s: stranger listed templates", versionName(v))
		}
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///docs/a"}); err == nil {
			t.Errorf("%s: stranger read a template's resource", versionName(v))
		}
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "file:///docs/a"}); err == nil && v != "" {
			t.Errorf("%s: stranger subscribed", versionName(v))
		}
		if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "file:///docs/a"}); err == nil && v != "" {
			t.Errorf("%s: stranger unsubscribed", versionName(v))
		}
		cs.Close()
	}
	if got := r.all(); len(got) != 0 {
		t.Errorf("ran %v", got)
	}
}

// rv63cConnectAs connects a client of options copts to s on protocol v,
// its session bound to id in auth (none when nil); it is closed when the
// test ends.
func rv63cConnectAs(t *testing.T, s *mcp.Server, auth *sessionAuth, id *mcpguard.Identity, v string, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if id != nil {
		auth.mu.Lock()
		auth.ids[ss] = id
		auth.mu.Unlock()
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, copts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs
}
