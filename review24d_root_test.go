package mcpguard

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review24dGuard is a guard for the Read tools named, whose caller is bob.
func review24dGuard(t *testing.T, tools ...string) *Guard {
	t.Helper()
	g, _ := review41cGuardWith(t, Options{}, tools...)
	return g
}

func review24dServer() *mcp.Server {
	return mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"},
		&mcp.ServerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PageSize: 2})
}

func review24dNop(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{}, nil
}

// review24dSettle waits for the goroutine count to fall to n at most.
func review24dSettle(n int) int {
	var now int
	for range 200 {
		if now = runtime.NumGoroutine(); now <= n {
			return now
		}
		time.Sleep(10 * time.Millisecond)
	}
	return now
}

func review24dSessions(s *mcp.Server) int {
	n := 0
	for range s.Sessions() {
		n++
	}
	return n
}

// An Install whose listing times out (a tool with a NaN in its _meta) must
// leave no goroutine and no session behind, and change nothing: the server
// fixed, a second Install works.
func TestReview24dInstallTimeoutLeavesNothing(t *testing.T) {
	defer func(w time.Duration) { installWait = w }(installWait)
	installWait = 200 * time.Millisecond
	before := runtime.NumGoroutine()
	g := review24dGuard(t, "x")
	srv := review24dServer()
	srv.AddTool(&mcp.Tool{Name: "x", InputSchema: json.RawMessage(`{"type":"object"}`), Meta: mcp.Meta{"n": math.NaN()}}, review24dNop)
	if err := g.Install(srv); err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("Install: %v", err)
	}
	n := review24dSessions(srv)
	for i := 0; i < 200 && n != 0; i++ {
		time.Sleep(10 * time.Millisecond)
		n = review24dSessions(srv)
	}
	if n != 0 {
		t.Errorf("%d sessions left on the server", n)
	}
	if now := review24dSettle(before); now > before {
		buf := make([]byte, 1<<16)
		t.Errorf("goroutines: %d before, %d after\n%s", before, now, buf[:runtime.Stack(buf, true)])
	}
	srv.AddTool(&mcp.Tool{Name: "x", InputSchema: json.RawMessage(`{"type":"object"}`)}, review24dNop)
	if err := g.Install(srv); err != nil {
		t.Fatalf("second Install: %v", err)
	}
}

// A receiving middleware added before Install that is slow on tools/list
// and does not watch its context: Install's wait is bounded all the same.
func TestReview24dInstallSlowMiddlewareBounded(t *testing.T) {
	defer func(w time.Duration) { installWait = w }(installWait)
	installWait = 200 * time.Millisecond
	g := review24dGuard(t, "x")
	srv := review24dServer()
	srv.AddTool(&mcp.Tool{Name: "x", InputSchema: json.RawMessage(`{"type":"object"}`)}, review24dNop)
	release := make(chan struct{})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				<-release
			}
			return next(ctx, method, req)
		}
	})
	t.Cleanup(func() { close(release) })
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- g.Install(srv) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "did not answer") {
			t.Errorf("Install: %v", err)
		}
		t.Logf("Install returned after %v", time.Since(start))
	case <-time.After(3 * time.Second):
		t.Error("Install did not return within 3 s of a 200 ms wait")
	}
}

type review24dParams struct {
	mcp.ParamsBase
	Kind string `json:"kind"`
}

type review24dResult struct {
	mcp.ResultBase
	Data any `json:"data,omitempty"`
}

// review24dNest returns a JSON value nested n levels deep.
func review24dNest(n int) json.RawMessage {
	return json.RawMessage(strings.Repeat(`{"a":`, n-1) + "{}" + strings.Repeat("}", n-1))
}

// Results a normal server sends must pass the new checks unchanged.
func TestReview24dNormalResultsPass(t *testing.T) {
	g := review24dGuard(t, "x", "deep")
	srv := review24dServer()
	srv.AddTool(&mcp.Tool{Name: "x", InputSchema: json.RawMessage(`{"type":"object"}`),
		Meta: mcp.Meta{"big": uint64(math.MaxUint64), "f": 1e308, "neg": -math.MaxFloat64}}, review24dNop)
	// A schema 510 levels deep, with the tool's own level and inputSchema's
	// object: within 512.
	srv.AddTool(&mcp.Tool{Name: "deep", InputSchema: json.RawMessage(`{"type":"object","properties":{"p":` + string(review24dNest(508)) + `}}`)}, review24dNop)
	big := strings.Repeat("héllo ✓ ", 1<<17)
	err := mcp.AddReceivingCustomMethod(srv, "acme/data", func(_ context.Context, _ *mcp.ServerSession, p *review24dParams) (*review24dResult, error) {
		switch p.Kind {
		case "nil":
			return nil, nil
		case "raw":
			return &review24dResult{Data: json.RawMessage(`{"s":"héllo ✓ 日本"}`)}, nil
		case "big":
			return &review24dResult{Data: big}, nil
		case "meta":
			return &review24dResult{ResultBase: mcp.ResultBase{Meta: mcp.Meta{"f": 1e308, "n": json.Number("12345678901234567890123")}}}, nil
		}
		return &review24dResult{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		srv.AddPrompt(&mcp.Prompt{Name: "p" + string(rune('a'+i))}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
		r := &mcp.Resource{URI: "file:///r" + string(rune('a'+i)), Name: "r"}
		if i == 1 {
			r.Annotations = &mcp.Annotations{Priority: 0}
		}
		if i == 2 {
			r.Meta = mcp.Meta{"f": 1e308}
		}
		srv.AddResource(r, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
		srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///t" + string(rune('a'+i)) + "/{x}", Name: "t",
			Annotations: &mcp.Annotations{Priority: 1}}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	if err := mcp.AddSendingCustomMethod[*review24dParams, *review24dResult](c, "acme/data"); err != nil {
		t.Fatal(err)
	}
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var names []string
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
	}
	if len(names) != 2 {
		t.Errorf("tools listed: %v, want x and deep", names)
	}
	for _, k := range []string{"raw", "big", "meta", "empty"} {
		res, err := mcp.CallCustomMethod[*review24dParams, *review24dResult](ctx, cs, "acme/data", &review24dParams{Kind: k})
		if err != nil {
			t.Errorf("acme/data %s: %v", k, err)
		} else if k == "big" && res.Data != big {
			t.Errorf("acme/data big: result changed")
		}
	}
	n := 0
	for _, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	for _, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	for _, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 15 {
		t.Errorf("listed %d prompts, resources and templates, want 15", n)
	}
}

// Install's doc: a tool with a part (its _meta, a schema) nested more than
// 512 levels deep is refused; one nested 512 levels deep, as a tool
// result's _meta or a prompt's may be, is not. The tool's own level is not
// its parts'.
func TestReview24dToolPartDepth512(t *testing.T) {
	g := review24dGuard(t, "x")
	for _, tc := range []struct {
		name string
		tool *mcp.Tool
		ok   bool
	}{
		{"schema512", &mcp.Tool{Name: "x", InputSchema: json.RawMessage(`{"type":"object","properties":{"p":` + string(review24dNest(510)) + `}}`)}, true},
		{"meta512", &mcp.Tool{Name: "x", InputSchema: json.RawMessage(`{"type":"object"}`), Meta: mcp.Meta{"m": review24dNest(511)}}, true},
		{"schema513", &mcp.Tool{Name: "x", InputSchema: json.RawMessage(`{"type":"object","properties":{"p":` + string(review24dNest(511)) + `}}`)}, false},
		{"meta513", &mcp.Tool{Name: "x", InputSchema: json.RawMessage(`{"type":"object"}`), Meta: mcp.Meta{"m": review24dNest(512)}}, false},
	} {
		_, err := g.compile(tc.tool)
		if (err == nil) != tc.ok {
			t.Errorf("%s: compile: %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// A UI resource hidden from a caller that could not be listed (a NaN
// priority, a _meta nested 600 levels deep): that caller's resources/list
// must be answered as by a server without it; a caller who may see it is
// refused.
func TestReview24dHiddenBadResourceUnseen(t *testing.T) {
	for _, bad := range []string{"nan", "deep"} {
		t.Run(bad, func(t *testing.T) {
			pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{
				{Name: "x", Class: policy.Read},
				{Name: "secret", Class: policy.Read, Roles: []string{"admin"}},
			}})
			if err != nil {
				t.Fatal(err)
			}
			ids := map[string]*Identity{
				"bob":   {Principal: &policy.Principal{Subject: "bob"}},
				"alice": {Principal: &policy.Principal{Subject: "alice", Roles: []string{"admin"}}},
			}
			g, err := New(pol, AuthenticatorFunc(func(_ context.Context, req mcp.Request) (*Identity, error) {
				return ids[req.GetSession().(*mcp.ServerSession).InitializeParams().ClientInfo.Name], nil
			}), &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			srv := review24dServer()
			srv.AddTool(&mcp.Tool{Name: "x", InputSchema: json.RawMessage(`{"type":"object"}`)}, review24dNop)
			srv.AddTool(&mcp.Tool{Name: "secret", InputSchema: json.RawMessage(`{"type":"object"}`),
				Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://secret"}}}, review24dNop)
			read := func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{}, nil
			}
			srv.AddResource(&mcp.Resource{URI: "file:///a", Name: "a"}, read)
			r := &mcp.Resource{URI: "ui://secret", Name: "s", MIMEType: "text/html;profile=mcp-app"}
			if bad == "nan" {
				r.Annotations = &mcp.Annotations{Priority: math.NaN()}
			} else {
				r.Meta = mcp.Meta{"m": review24dNest(600)}
			}
			srv.AddResource(r, read)
			if err := g.Install(srv); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			list := func(who string) ([]string, error) {
				ct, st := mcp.NewInMemoryTransports()
				ss, err := srv.Connect(ctx, st, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer ss.Close()
				cs, err := mcp.NewClient(&mcp.Implementation{Name: who, Version: "1"}, nil).Connect(ctx, ct, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				res, err := cs.ListResources(ctx, nil)
				if err != nil {
					return nil, err
				}
				var uris []string
				for _, r := range res.Resources {
					uris = append(uris, r.URI)
				}
				return uris, nil
			}
			if uris, err := list("bob"); err != nil || len(uris) != 1 || uris[0] != "file:///a" {
				t.Errorf("bob: %v %v, want [file:///a]", uris, err)
			}
			if uris, err := list("alice"); err == nil {
				t.Errorf("alice: %v, want a refusal", uris)
			}
		})
	}
}
