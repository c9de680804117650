package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r45aGate is a receiving middleware added before Install (below the
// guard) that, while armed, holds each resources/list the guard makes of
// its own (its context carries no caller): the listing sends a channel on
// the gate and waits for it closed. A listing of the guard's own of the
// method fail names fails.
type r45aGate struct {
	mu      sync.Mutex
	gate    chan chan struct{}
	fail    atomic.Value // string
	tools   atomic.Int64 // tools/list that reached the server
	listens atomic.Int64 // subscriptions/listen that reached it
	// left is how long the last resources/list of the guard's own had
	// before its context's deadline (0: none).
	left atomic.Int64
}

func (g *r45aGate) arm() chan chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate = make(chan chan struct{})
	return g.gate
}

func (g *r45aGate) disarm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate = nil
}

func (g *r45aGate) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list":
			g.tools.Add(1)
		case "subscriptions/listen":
			g.listens.Add(1)
		}
		if f, _ := g.fail.Load().(string); f == method && mcpguard.FromContext(ctx) == nil {
			return nil, errors.New("review45a: " + method + " is down")
		}
		if method == "resources/list" && mcpguard.FromContext(ctx) == nil {
			if dl, ok := ctx.Deadline(); ok {
				g.left.Store(int64(time.Until(dl)))
			}
			g.mu.Lock()
			gate := g.gate
			g.mu.Unlock()
			if gate != nil {
				release := make(chan struct{})
				gate <- release
				<-release
			}
		}
		return next(ctx, method, req)
	}
}

// r45aGated returns a gate and rnSpec with the gate's middleware added to
// the server before Install.
func r45aGated() (*r45aGate, lcSpec) {
	g, spec := &r45aGate{}, rnSpec()
	spec.setup = func(srv *mcp.Server) { srv.AddReceivingMiddleware(g.middleware) }
	return g, spec
}

// r45aNext waits for the next listing gate holds.
func r45aNext(t *testing.T, gate chan chan struct{}, what string) chan struct{} {
	t.Helper()
	select {
	case release := <-gate:
		return release
	case <-time.After(5 * time.Second):
		t.Fatalf("%s listed no resources", what)
		return nil
	}
}

// r45aPassed adds a sending middleware to r's server after Install, above
// the guard, and returns a channel that is sent to each time the guard is
// done with a resources/list_changed of the server's to one of sessions.
func r45aPassed(r *lcRig, sessions ...*mcp.ServerSession) chan struct{} {
	return r45aPassedOf(r, "notifications/resources/list_changed", sessions...)
}

// r45aPassedOf is r45aPassed for the notification of the method notice.
func r45aPassedOf(r *lcRig, notice string, sessions ...*mcp.ServerSession) chan struct{} {
	passed := make(chan struct{}, len(sessions))
	r.srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			ss, _ := req.GetSession().(*mcp.ServerSession)
			if method == notice && slices.Contains(sessions, ss) {
				passed <- struct{}{}
			}
			return res, err
		}
	})
	return passed
}

// r45aResend adds rnPlainResource to r's server again: its resources are
// the same, and it sends its sessions a resources/list_changed.
func r45aResend(r *lcRig) { r.srv.AddResource(&rnPlainResource, r45aRead) }

func r45aRead(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
}

// r45aWait waits for the guard to be done with a server's notification to
// each of n sessions (see r45aPassed).
func r45aWait(t *testing.T, passed chan struct{}, n int) {
	t.Helper()
	for range n {
		select {
		case <-passed:
		case <-time.After(5 * time.Second):
			t.Fatal("the guard did not finish with the server's list_changed notification")
		}
	}
}

// TestReview45aServerNoticeOvertakenByPolicy: a resources/list_changed
// the server sends (its resources the same) while a SetPolicy hides a UI
// resource: the guard's check for the new policy reads the session's view
// before the notification's listing, filtered by the old policy, records
// it, so leaves the session to that view; the guard checks it again once
// recorded, and the session is told that its listing changed. (Without,
// bob's client keeps a listing with the UI resource pa hides.) A sending
// middleware added after Install, above the guard, tells when the guard
// is done with the server's notification.
func TestReview45aServerNoticeOvertakenByPolicy(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			pu, pa := rnPolicy(t, "user"), rnPolicy(t, "admin")
			g, spec := r45aGated()
			r := newLCRig(t, v, pu, spec)
			s := r.connect(bob, lcListRes)
			passed := r45aPassed(r, s.ss)

			gate := g.arm()
			held := map[chan struct{}]bool{}
			open := func(c chan struct{}) {
				if held[c] {
					delete(held, c)
					close(c)
				}
			}
			defer func() { // a failed wait leaves no listing held
				g.disarm()
				for c := range held {
					open(c)
				}
			}()
			r45aResend(r)
			notice := r45aNext(t, gate, "the server's notification")
			held[notice] = true
			r.setPolicy(pa)
			check := r45aNext(t, gate, "the check of pa")
			held[check] = true
			g.disarm()
			open(notice)
			r45aWait(t, passed, 1)
			open(check)
			r.waitRes(s, 1)
			if got := s.uris(t); !slices.Equal(got, []string{"file:///plain.txt"}) {
				t.Errorf("bob lists %v after being told of pa, want the plain resource only", got)
			}
		})
	}
}

// TestReview45aSubscribedOnlyNotTold: a session that subscribed to a
// resource and never listed the resources has none to refresh: the
// server's resources/list_changed is not passed on to it, nor does it make
// the session one that a new policy hiding a UI resource tells. A session
// that listed, connected after it and told, bounds the check.
func TestReview45aSubscribedOnlyNotTold(t *testing.T) {
	pu, pa := rnPolicy(t, "user"), rnPolicy(t, "admin")
	r := newLCRig(t, "2025-11-25", pu, rnSpec())
	s := r.dial(bob, "2025-11-25", lcListRes)
	// The server takes no subscription: the answer is an error, but the
	// guard knows the session's caller now.
	_ = s.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "file:///plain.txt"})
	sentinel := r.connect(bob, lcListRes)
	passed := r45aPassed(r, s.ss, sentinel.ss) // both done before the policy
	r45aResend(r)
	r45aWait(t, passed, 2)
	r.setPolicy(pa)
	r.waitRes(sentinel, 1)
	if n := r.w.resCount(s.ss); n != 0 {
		t.Errorf("the session that never listed the resources was sent %d resources/list_changed", n)
	}
}

// TestReview45aServerNoticeListingFails: a resources/list_changed of the
// server's (a resource added) whose listing fails, of the tools or of the
// resources, is not passed on, and the failure is logged: the guard cannot
// tell whether the session's caller may see the change. So for a
// tools/list_changed (a tool added) whose tools listing fails.
func TestReview45aServerNoticeListingFails(t *testing.T) {
	for _, tc := range []struct {
		name, method, msg string
		tools             bool // the notice is the server's tools/list_changed
	}{
		{"tools_list", "tools/list", "mcpguard: resources/list_changed not passed on: listing the tools failed", false},
		{"resources_list", "resources/list", "mcpguard: resources/list_changed not passed on: listing the resources failed", false},
		{"tools_notice", "tools/list", "mcpguard: tools/list_changed not passed on: listing the tools failed", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, spec := r45aGated()
			log := &r44bLog{}
			r := newR44bRig(t, rnPolicy(t, "user"), spec, log)
			lists, notice, count := lcListRes, "notifications/resources/list_changed", r.w.resCount
			if tc.tools {
				lists, notice, count = lcListTools, "notifications/tools/list_changed", r.w.toolsCount
			}
			s := r.connect(bob, lists)
			passed := r45aPassedOf(r, notice, s.ss)
			g.fail.Store(tc.method)
			if tc.tools {
				r.srv.AddTool(&mcp.Tool{Name: "added", InputSchema: json.RawMessage(`{"type":"object"}`)},
					func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
			} else {
				r.srv.AddResource(&mcp.Resource{URI: "file:///new.txt", Name: "new"}, r45aRead)
			}
			r45aWait(t, passed, 1)
			if n := count(s.ss); n != 0 {
				t.Errorf("the server's notification was passed on %d times", n)
			}
			if !log.logged(tc.msg) {
				t.Errorf("not logged: %q", tc.msg)
			}
		})
	}
}

// TestReview45aSessionReseenDuringNotice: a session whose request is
// refused as unauthenticated while the guard lists the resources for a
// server's resources/list_changed, and that then subscribed as bob again
// without listing, has no listing to refresh when the guard is done: the
// notification is not passed on to it.
func TestReview45aSessionReseenDuringNotice(t *testing.T) {
	g, spec := r45aGated()
	r := newLCRig(t, "2025-11-25", rnPolicy(t, "user"), spec)
	s := r.connect(bob, lcListRes)
	passed := r45aPassed(r, s.ss)
	gate := g.arm()
	r.srv.AddResource(&mcp.Resource{URI: "file:///new.txt", Name: "new"}, r45aRead)
	release := r45aNext(t, gate, "the server's notification")
	g.disarm()
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	defer open() // a failed step leaves no listing held

	ctx := context.Background()
	r.bind(s.ss, nil)
	if _, err := s.cs.ListTools(ctx, nil); err == nil {
		t.Fatal("tools/list without an identity: no error")
	}
	r.bind(s.ss, bob)
	_ = s.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "file:///plain.txt"}) // the server takes none
	open()
	r45aWait(t, passed, 1)
	if n := r.w.resCount(s.ss); n != 0 {
		t.Errorf("the session, re-seen and not listed since, was passed %d resources/list_changed", n)
	}
}

// The UI resource of x_app, a tool a server adds after its sessions listed.
const r45aXUI = "ui://x/app"

// r45aPolicy is rnPolicy with report_app for users and x_app for xRoles.
func r45aPolicy(t *testing.T, xRoles ...string) *policy.Policy {
	t.Helper()
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{
		{Name: "echo", Class: policy.Read},
		{Name: "report_app", Class: policy.Read, Roles: []string{"user"}},
		{Name: "x_app", Class: policy.Read, Roles: xRoles},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// r45aAddX adds x_app, which names r45aXUI, to r's server.
func r45aAddX(r *lcRig) {
	r.srv.AddTool(&mcp.Tool{Name: "x_app", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		Meta:        mcp.Meta{"ui": map[string]any{"resourceUri": r45aXUI}}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil })
}

// TestReview45aPolicyNoticeToolAdded: a SetPolicy after the server added a
// tool (its tools/list_changed passed on, nothing listed since) judges the
// sessions by the server's tools now: bob, who listed x_app's UI resource
// before x_app named it, is told when the policy hides x_app from him, and
// his next listing lacks the resource.
func TestReview45aPolicyNoticeToolAdded(t *testing.T) {
	spec := rnSpec()
	spec.resources = append(spec.resources, mcp.Resource{URI: r45aXUI, Name: "x"})
	r := newLCRig(t, "2025-11-25", r45aPolicy(t, "user"), spec)
	s := r.connect(bob, lcListRes|lcListTools)
	r45aAddX(r)
	r.waitTools(s, 1) // x_app, which bob may see: the registry is stale now
	r.setPolicy(r45aPolicy(t, "admin"))
	r.waitRes(s, 1)
	if got, want := s.uris(t), []string{"file:///plain.txt", rnUI}; !slices.Equal(got, want) {
		t.Errorf("bob lists %v after being told, want %v", got, want)
	}
}

// TestReview45aPolicyNoticeListingFails: a SetPolicy's check whose listing
// fails (of the tools, which a tool added made it list, or of the
// resources) tells the session nothing and logs why; the session keeps
// its view, so a policy that shows it what it listed tells it nothing
// either. The tools notices of that next policy, sent after the check
// ended, bound the check.
func TestReview45aPolicyNoticeListingFails(t *testing.T) {
	for _, tc := range []struct{ method, msg string }{
		{"tools/list", "mcpguard: resources/list_changed for a new policy not sent: listing the tools failed"},
		{"resources/list", "mcpguard: resources/list_changed for a new policy not sent: listing the resources failed"},
	} {
		t.Run(strings.ReplaceAll(tc.method, "/", "_"), func(t *testing.T) {
			g, spec := r45aGated()
			log := &r44bLog{}
			spec.resources = append(spec.resources, mcp.Resource{URI: r45aXUI, Name: "x"})
			pu := r45aPolicy(t, "user")
			r := newR44bRig(t, pu, spec, log)
			s := r.connect(bob, lcListRes|lcListTools)
			r45aAddX(r)
			r.waitTools(s, 1)
			g.fail.Store(tc.method)
			r.setPolicy(r45aPolicy(t, "admin"))
			r.waitTools(s, 2) // x_app hidden
			waitFor(t, func() bool { return log.logged(tc.msg) })
			g.fail.Store("")
			r.setPolicy(pu)
			r.waitTools(s, 3) // x_app back
			if n := r.w.resCount(s.ss); n != 0 {
				t.Errorf("the session was sent %d resources/list_changed", n)
			}
		})
	}
}

// TestReview45aPolicyNoticeListingBounded: the resources/list a SetPolicy's
// check makes has 10 seconds: a server that never answers holds the check
// (and the notices of every policy after it) no longer.
func TestReview45aPolicyNoticeListingBounded(t *testing.T) {
	g, spec := r45aGated()
	r := newLCRig(t, "2025-11-25", rnPolicy(t, "user"), spec)
	s := r.connect(bob, lcListRes)
	r.setPolicy(rnPolicy(t, "admin"))
	r.waitRes(s, 1)
	if left := time.Duration(g.left.Load()); left <= 5*time.Second || left > 10*time.Second {
		t.Errorf("the check's resources/list had %v before its deadline, want 10s at most (and over 5s)", left)
	}
}

// TestReview45aDiscoverTellsSubscriptions: the guard learns whether the
// server takes subscriptions from a session's server/discover too, as
// TestReview41cInitializeTellsSubscriptions shows it does from initialize:
// a server that had no resources at Install and then gained some without
// a SubscribeHandler says, to a client on the default protocol, that it
// takes none, and the guard passes that client's subscription on without
// listing the tools to find the UI resources the caller may not see.
func TestReview45aDiscoverTellsSubscriptions(t *testing.T) {
	g, spec := r45aGated()
	spec.resources = nil
	r := newLCRig(t, "", rnPolicy(t, "user"), spec)
	r.srv.AddResource(&rnPlainResource, r45aRead)
	s := r.dial(bob, "", 0)
	if caps := s.cs.InitializeResult().Capabilities; caps.Resources == nil || caps.Resources.Subscribe {
		t.Fatalf("the server's capabilities: %+v, want resources without subscribe", caps.Resources)
	}
	before := g.tools.Load()
	// On the default protocol a subscription is a subscriptions/listen,
	// which the guard passes on after any listing it makes for it.
	if err := s.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: rnUI}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return g.listens.Load() >= 1 })
	if n := g.tools.Load() - before; n != 0 {
		t.Errorf("%d tools/list below the guard for a subscription the server does not take, want 0", n)
	}
}
