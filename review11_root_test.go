package mcpguard_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A name the server does not have is TOOL_NOT_FOUND (step 4, resolve)
// before any authorization (step 5) applies, even when the policy has a
// rule for it, its own or the Default one: otherwise a Default write rule
// not on the allowlist answers WRITE_NOT_ALLOWED for every missing name
// and TOOL_NOT_FOUND for a hidden tool, which then stands out.
func TestReview11UnknownToolResolvedBeforeAuthorize(t *testing.T) {
	for _, show := range []bool{false, true} {
		cfg := basePolicy(show)
		cfg.Tools = append(cfg.Tools, policy.ToolRule{Name: "ghost", Class: policy.Write})
		cfg.Default = &policy.ToolRule{Class: policy.Write, Roles: []string{"user"}}
		h := newHarness(t, cfg, nil)
		for _, v := range protocolVersions {
			cs := h.connect(bob, clientOpts{version: v})
			names := []string{"no_such_tool", "ghost"}
			if !show {
				names = append(names, "admin_stats") // hidden from bob
			}
			for _, name := range names {
				res, err := call(t, cs, name, map[string]any{})
				we := wireError(err)
				if we == nil {
					t.Fatalf("show=%v %s: %s: got result %+v, err %v; want the unknown-tool JSON-RPC error", show, versionName(v), name, res, err)
				}
				if want := `unknown tool "` + name + `"`; we.Code != -32602 || we.Message != want {
					t.Errorf("show=%v %s: %s: got %d %q, want -32602 %q", show, versionName(v), name, we.Code, we.Message, want)
				}
			}
		}
	}
}

// Output validation checks the tool's output schema, not strict input's
// rules: an output whose keys differ only in letter case (environment
// variables, HTTP headers) is a well-formed result, which the go-sdk's
// typed-tool wrapper itself accepts, and must not become INVALID_RESPONSE.
// An exact duplicate key stays refused: clients disagree about which wins.
func TestReview11OutputKeysDifferingInCase(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "env", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "env", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, map[string]string, error) {
			return nil, map[string]string{"Path": "/bin", "PATH": "/usr/bin"}, nil
		})
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	res, err := call(t, connectPlain(t, srv, nil), "env", map[string]any{})
	if err != nil || res.IsError {
		t.Fatalf("typed tool with keys differing in case: %+v, %v (code %q), want its result", res, err, errorCode(t, res))
	}

	// Wrap, with an exact duplicate: still refused.
	tool := &mcp.Tool{Name: "env", InputSchema: json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object","additionalProperties":{"type":"string"}}`)}
	for _, tc := range []struct {
		name, out string
		wantErr   bool
	}{
		{"case_differs", `{"Path":"/bin","PATH":"/usr/bin"}`, false},
		{"exact_duplicate", `{"PATH":"/bin","PATH":"/usr/bin"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := g.Wrap(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{StructuredContent: json.RawMessage(tc.out)}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "env", Arguments: json.RawMessage(`{}`)}})
			if err != nil {
				t.Fatal(err)
			}
			if got := errorCode(t, res); (got == "INVALID_RESPONSE") != tc.wantErr {
				t.Errorf("output %s: code %q, want INVALID_RESPONSE %v", tc.out, got, tc.wantErr)
			}
		})
	}
}

// RetryReads retries a read after a transient error, but not once the
// call's own context has ended: context.DeadlineExceeded reports
// Temporary() == true, and a retry under the expired deadline either fails
// at once or, for a handler that does not watch its context, runs past the
// per-call deadline and hits the downstream a second time for nothing.
func TestReview11NoReadRetryAfterDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "lookup", Class: policy.Read}}})
		if err != nil {
			t.Fatal(err)
		}
		g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{RetryReads: true, Timeout: 10 * time.Millisecond, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		var n atomic.Int64
		h, err := g.Wrap(&mcp.Tool{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				n.Add(1)
				<-ctx.Done()
				return nil, ctx.Err()
			})
		if err != nil {
			t.Fatal(err)
		}
		res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "lookup", Arguments: json.RawMessage(`{}`)}})
		if err != nil || errorCode(t, res) != "UPSTREAM_UNAVAILABLE" {
			t.Errorf("result %+v, %v: want UPSTREAM_UNAVAILABLE", res, err)
		}
		if got := n.Load(); got != 1 {
			t.Errorf("handler ran %d times after its deadline passed, want 1", got)
		}
	})
}

// Install guards the whole server: a prompt or a resource is not handed to
// a caller the guard cannot authenticate (fail closed, as tools/list and
// tools/call are), and its handler runs as the real caller (auth
// passthrough: the Identity is in its context, never a shared account).
func TestReview11InstallAuthenticatesPromptsAndResources(t *testing.T) {
	h := newHarness(t, basePolicy(false), nil)
	var seen atomic.Value
	h.srv.AddResource(&mcp.Resource{URI: "file:///secret.txt", Name: "secret"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			if p := mcpguard.PrincipalFromContext(ctx); p != nil {
				seen.Store(p.Subject)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "s3cr3t"}}}, nil
		})
	h.srv.AddPrompt(&mcp.Prompt{Name: "greet"},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if p := mcpguard.PrincipalFromContext(ctx); p != nil {
				seen.Store(p.Subject)
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
		})
	ctx := context.Background()
	for _, v := range protocolVersions {
		anon := h.connect(nil, clientOpts{version: v})
		if res, err := anon.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///secret.txt"}); err == nil {
			t.Errorf("%s: unauthenticated resources/read answered %+v", versionName(v), res)
		}
		if res, err := anon.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet"}); err == nil {
			t.Errorf("%s: unauthenticated prompts/get answered %+v", versionName(v), res)
		}
		if res, err := anon.ListResources(ctx, nil); err == nil {
			t.Errorf("%s: unauthenticated resources/list answered %+v", versionName(v), res)
		}
		if res, err := anon.ListPrompts(ctx, nil); err == nil {
			t.Errorf("%s: unauthenticated prompts/list answered %+v", versionName(v), res)
		}

		cs := h.connect(bob, clientOpts{version: v})
		seen.Store("")
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///secret.txt"}); err != nil {
			t.Errorf("%s: bob's resources/read: %v", versionName(v), err)
		}
		if got := seen.Load(); got != "bob" {
			t.Errorf("%s: resource handler saw caller %q, want bob", versionName(v), got)
		}
		seen.Store("")
		if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet"}); err != nil {
			t.Errorf("%s: bob's prompts/get: %v", versionName(v), err)
		}
		if got := seen.Load(); got != "bob" {
			t.Errorf("%s: prompt handler saw caller %q, want bob", versionName(v), got)
		}
	}
}
