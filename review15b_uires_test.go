package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lenientName is how a plausible template handler finds the page a URI
// names: it ignores the query and fragment, decodes percent-escapes (as
// the go-sdk's own uritemplate.Match does), folds case (pages on a
// case-insensitive file system) and cleans the path.
func lenientName(uri string) string {
	s := uri
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	if d, err := url.PathUnescape(s); err == nil {
		s = d
	}
	s = strings.ToLower(s)
	s = strings.TrimPrefix(s, "ui://")
	return path.Clean("/" + s)
}

// lenientServer serves its UI pages through templates whose handler (and
// SubscribeHandler) resolve a URI with lenientName. withAdmin adds the
// admin tools and their pages; without, it is the server bob should seem
// to talk to.
type lenientServer struct {
	srv   *mcp.Server
	mu    sync.Mutex
	pages map[string]string // lenientName -> content
	heard []string          // URIs the SubscribeHandler heard
}

func newLenientServer(withAdmin bool, before func(*mcp.Server)) *lenientServer {
	l := &lenientServer{pages: map[string]string{}}
	l.srv = mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.heard = append(l.heard, req.Params.URI)
			if _, ok := l.pages[lenientName(req.Params.URI)]; !ok {
				return mcp.ResourceNotFoundError(req.Params.URI)
			}
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	addTools(l.srv, &spy{})
	if before != nil {
		before(l.srv)
	}
	read := func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		l.mu.Lock()
		page, ok := l.pages[lenientName(req.Params.URI)]
		l.mu.Unlock()
		if !ok {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: page}}}, nil
	}
	l.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "ui://tpl/{+page}", Name: "pages"}, read)
	l.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "ui://{app}/app", Name: "apps"}, read)
	l.page("ui://tpl/open", "open page")
	l.srv.AddTool(uiTool("open_app", nested("ui://tpl/open")), okTool)
	if withAdmin {
		l.page("ui://tpl/admin", "ADMIN PAGE")
		l.page("ui://admin/app", "ADMIN APP")
		l.srv.AddTool(uiTool("admin_tpl", nested("ui://tpl/admin")), okTool)
		l.srv.AddTool(uiTool("admin_app", nested("ui://admin/app")), okTool)
		// The static resource is found first, for its exact URI only.
		l.srv.AddResource(&mcp.Resource{URI: "ui://admin/app", Name: "admin app"}, read)
	}
	return l
}

func (l *lenientServer) page(uri, content string) {
	l.mu.Lock()
	l.pages[lenientName(uri)] = content
	l.mu.Unlock()
}

// guard installs a guard with uiPolicy (admin_* for admins only).
func (l *lenientServer) guard(t *testing.T) *harness {
	t.Helper()
	u := &uiServer{srv: l.srv}
	return u.guard(t)
}

// TestReview15bHiddenUIResourceSpellings: a resource template matches a
// URI by a pattern that admits percent-escapes, and its handler may read
// the URI leniently (decoded as uritemplate.Match decodes it, case folded,
// query and fragment ignored, path cleaned), so another spelling of the
// UI resource of a tool bob may not see serves it. Every such spelling
// must be answered to bob as by a server that does not have the tool;
// alice, who may see it, is served each (so the handler does serve them).
func TestReview15bHiddenUIResourceSpellings(t *testing.T) {
	l := newLenientServer(true, nil)
	h := l.guard(t)
	guarded := h.rawConnect(bob)
	bare := rawConnectTo(t, newLenientServer(false, nil).srv, nil)
	aliceRaw := h.rawConnect(alice)
	spellings := []string{
		"ui://tpl/%61dmin", "ui://tpl/%61%64%6d%69%6e", "ui://tpl/ADMIN", "ui://tpl/Admin",
		"ui://tpl/admin?v=2", "ui://tpl/admin#top", "ui://tpl/x/../admin", "ui://tpl//admin",
		"ui://tpl/./admin", "ui://tpl/admin/", "ui://tpl/%2e/admin", "ui://tpl/ADMIN?x#y",
		"ui://%61dmin/app", "ui://ADMIN/app", "ui://Admin/app",
	}
	for _, uri := range spellings {
		q, _ := json.Marshal(uri)
		read := `{"uri":` + string(q) + `}`
		if got := aliceRaw.response("resources/read", read); !strings.Contains(got, "ADMIN") {
			t.Fatalf("the handler does not serve alice %s: %s (the test's premise)", uri, got)
		}
		for _, p := range []struct{ method, params string }{
			{"resources/read", read},
			{"resources/subscribe", read},
			{"subscriptions/listen", `{"notifications":{"resourceSubscriptions":[` + string(q) + `]}}`},
		} {
			got, want := guarded.response(p.method, p.params), bare.response(p.method, p.params)
			if got != want {
				t.Errorf("bob's %s %s:\n got %s\nwant %s", p.method, p.params, got, want)
			}
		}
	}
	// Bob's hidden spellings reach the SubscribeHandler only with the
	// guard's suffix in their path (see asAbsent): as URIs it has no page
	// for, however leniently read. (Alice subscribed to nothing: whatever
	// it heard, it heard from bob.)
	l.mu.Lock()
	for _, uri := range l.heard {
		if _, ok := l.pages[lenientName(uri)]; ok || !review26cSuffix.MatchString(uri) {
			t.Errorf("the SubscribeHandler heard bob's %s", uri)
		}
	}
	l.mu.Unlock()
	// What bob may see he still reads, however spelled.
	for _, uri := range []string{"ui://tpl/open", "ui://tpl/OPEN", "ui://tpl/%6fpen?v=1"} {
		q, _ := json.Marshal(uri)
		if got := guarded.response("resources/read", `{"uri":`+string(q)+`}`); !strings.Contains(got, "open page") {
			t.Errorf("bob reading %s: %s", uri, got)
		}
	}
}

// TestReview15bOpenAIOutputTemplate: the OpenAI Apps SDK names a tool's UI
// resource (its widget) under _meta["openai/outputTemplate"], which MCP
// Apps hosts still honour as an alias of _meta.ui.resourceUri: the widget
// of a tool bob may not see is a resource the server does not have.
func TestReview15bOpenAIOutputTemplate(t *testing.T) {
	const widget = "ui://widget/admin.html"
	u := newUIServer(0, true, func(s *mcp.Server) {
		s.AddTool(uiTool("admin_widget", mcp.Meta{"openai/outputTemplate": widget}), okTool)
	})
	u.add(widget)
	cfg := uiPolicy()
	cfg.Tools = append(cfg.Tools, policy.ToolRule{Name: "admin_widget", Class: policy.Read})
	h := guardWith(t, u.srv, cfg)
	bobCS, _ := connectUI(t, h, bob, "2025-11-25", nil)
	aliceCS, _ := connectUI(t, h, alice, "2025-11-25", nil)
	if got := strings.Join(resourceURIs(t, bobCS), " "); strings.Contains(got, widget) {
		t.Errorf("bob lists %s", got)
	}
	if got := strings.Join(resourceURIs(t, aliceCS), " "); !strings.Contains(got, widget) {
		t.Errorf("alice lists %s, without %s", got, widget)
	}
	ctx := context.Background()
	if _, err := bobCS.ReadResource(ctx, &mcp.ReadResourceParams{URI: widget}); err == nil {
		t.Errorf("bob read %s", widget)
	}
	if _, err := aliceCS.ReadResource(ctx, &mcp.ReadResourceParams{URI: widget}); err != nil {
		t.Errorf("alice reading %s: %v", widget, err)
	}
}

// listCounter counts the tools/list and resources/list requests that
// reach the server below the guard (a receiving middleware added before
// Install is inside it).
type listCounter struct{ tools, resources atomic.Int64 }

func (c *listCounter) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch req.(type) {
		case *mcp.ListToolsRequest:
			c.tools.Add(1)
		case *mcp.ListResourcesRequest:
			c.resources.Add(1)
		}
		return next(ctx, method, req)
	}
}

// TestReview15bNotificationCost: a resources/updated or resources/list_changed
// notification to N sessions must not make the guard list the server's
// tools (or resources) once per session: the fan-out is one notification,
// and its cost through the server must not grow with N. Sessions of
// callers who see different resources are still told apart within one
// fan-out.
func TestReview15bNotificationCost(t *testing.T) {
	for _, v := range protocolVersions {
		for _, n := range []int{1, 8, 32} {
			t.Run(fmt.Sprintf("%s_sessions_%d", versionName(v), n), func(t *testing.T) {
				c := &listCounter{}
				w := newUpdateWatch()
				u := newUIServer(0, true, func(s *mcp.Server) {
					s.AddReceivingMiddleware(c.middleware)
					s.AddSendingMiddleware(w.middleware(w.delivered, false))
				})
				h := u.guard(t)
				h.srv.AddSendingMiddleware(w.middleware(w.attempted, true))
				h.srv.AddTool(uiTool("admin_extra", nested("ui://admin/extra")), okTool)
				copts := &mcp.ClientOptions{ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {}}
				var sessions []*mcp.ServerSession
				isAlice := map[*mcp.ServerSession]bool{}
				for i := range n {
					id := bob
					if i%2 == 1 {
						id = alice
					}
					cs, ss := connectUI(t, h, id, v, copts)
					resourceURIs(t, cs)
					if err := w.subscribe(t, cs, ss, v, uiOpen); err != nil {
						t.Fatal(err)
					}
					sessions = append(sessions, ss)
					isAlice[ss] = id == alice
				}
				if v == "" {
					waitFor(t, func() bool {
						w.mu.Lock()
						defer w.mu.Unlock()
						for _, ss := range sessions {
							if w.acked[ss] < 2 { // the resources listen and the subscription's
								return false
							}
						}
						return true
					})
				}

				tools := c.tools.Load()
				if err := h.srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uiOpen}); err != nil {
					t.Fatal(err)
				}
				for _, ss := range sessions {
					if got := w.count(w.delivered, fmt.Sprintf("%p notifications/resources/updated %s", ss, uiOpen)); got != 1 {
						t.Fatalf("a session was sent %d resources/updated, want 1", got)
					}
				}
				updTools := c.tools.Load() - tools
				t.Logf("resources/updated to %d sessions: %d tools/list below the guard", n, updTools)
				if updTools > 1 {
					t.Errorf("resources/updated to %d sessions listed the tools %d times, want at most 1", n, updTools)
				}

				key := func(ss *mcp.ServerSession) string {
					return fmt.Sprintf("%p notifications/resources/list_changed", ss)
				}
				told := map[*mcp.ServerSession]int{}
				for i, step := range []struct {
					uri     string
					bobSees bool
				}{{"ui://admin/extra", false}, {"file:///new.txt", true}} {
					tools, resources := c.tools.Load(), c.resources.Load()
					u.add(step.uri)
					for _, ss := range sessions {
						for w.count(w.attempted, key(ss)) < i+1 {
							select {
							case <-w.changed:
							case <-timeout():
								t.Fatalf("adding %s: the server did not notify every session", step.uri)
							}
						}
					}
					for _, ss := range sessions {
						want := 1
						if !isAlice[ss] && !step.bobSees {
							want = 0
						}
						if got := w.count(w.delivered, key(ss)) - told[ss]; got != want {
							t.Errorf("adding %s: a session of alice's (%v) was sent %d resources/list_changed, want %d", step.uri, isAlice[ss], got, want)
						}
						told[ss] += want
					}
					lcTools, lcRes := c.tools.Load()-tools, c.resources.Load()-resources
					t.Logf("resources/list_changed to %d sessions: %d tools/list, %d resources/list below the guard", n, lcTools, lcRes)
					if lcTools > 1 || lcRes > 1 {
						t.Errorf("resources/list_changed to %d sessions listed the tools %d times and the resources %d times, want at most 1 each", n, lcTools, lcRes)
					}
				}
			})
		}
	}
}

// guardWith installs a guard with cfg on srv and returns a harness for it.
func guardWith(t *testing.T, srv *mcp.Server, cfg policy.Config) *harness {
	t.Helper()
	h := &harness{t: t, srv: srv, auth: &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}, sink: &memSink{}, down: &spy{}}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.g, err = mcpguard.New(pol, h.auth, &mcpguard.Options{Audit: h.sink, Confirmer: testSigner(t, nil), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.g.Install(srv); err != nil {
		t.Fatal(err)
	}
	return h
}
