package mcpguard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lcPolicy is the policy of the SetPolicy list_changed tests: echo for
// every caller, ops for admins, report for reportRoles.
func lcPolicy(t *testing.T, reportRoles ...string) *policy.Policy {
	t.Helper()
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{
		{Name: "echo", Class: policy.Read},
		{Name: "report", Class: policy.Read, Roles: reportRoles},
		{Name: "ops", Class: policy.Read, Roles: []string{"admin"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// lcWatch counts, per server session, the tools/list_changed and the
// resources/list_changed notifications that reach the wire (a sending
// middleware added before Install: below the guard), those stamped with a
// listen's subscriptionId, and the subscriptions/listen acknowledgements.
type lcWatch struct {
	mu         sync.Mutex
	tools      map[*mcp.ServerSession]int
	res        map[*mcp.ServerSession]int
	acked      map[*mcp.ServerSession]bool
	toolsSubID int // tools/list_changed stamped with a listen's subscriptionId
	resSubID   int // resources/list_changed stamped with one
}

func newLCWatch() *lcWatch {
	return &lcWatch{tools: map[*mcp.ServerSession]int{}, res: map[*mcp.ServerSession]int{}, acked: map[*mcp.ServerSession]bool{}}
}

func (w *lcWatch) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		w.mu.Lock()
		switch method {
		case "notifications/tools/list_changed":
			w.tools[ss]++
			if p, _ := req.GetParams().(*mcp.ToolListChangedParams); p != nil && p.Meta[mcp.MetaKeySubscriptionID] != nil {
				w.toolsSubID++
			}
		case "notifications/resources/list_changed":
			w.res[ss]++
			if p, _ := req.GetParams().(*mcp.ResourceListChangedParams); p != nil && p.Meta[mcp.MetaKeySubscriptionID] != nil {
				w.resSubID++
			}
		case "notifications/subscriptions/acknowledged":
			w.acked[ss] = true
		}
		w.mu.Unlock()
		return next(ctx, method, req)
	}
}

// toolsCount is how many tools/list_changed ss was sent.
func (w *lcWatch) toolsCount(ss *mcp.ServerSession) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tools[ss]
}

// resCount is how many resources/list_changed ss was sent.
func (w *lcWatch) resCount(ss *mcp.ServerSession) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.res[ss]
}

// totals are how many notifications of each kind all sessions were sent.
func (w *lcWatch) totals() (tools, res int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range w.tools {
		tools += n
	}
	for _, n := range w.res {
		res += n
	}
	return tools, res
}

// ackedOn reports whether a listen of ss was acknowledged.
func (w *lcWatch) ackedOn(ss *mcp.ServerSession) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked[ss]
}

// acks is how many sessions had a listen acknowledged.
func (w *lcWatch) acks() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// lcSpec is what a rig's server has: its tools (read-only, each answering
// "ok"), whether report_app names rnUI as its UI resource, its resources,
// its capabilities, and what setup adds to it after the watch and before
// Install (below the guard).
type lcSpec struct {
	tools     []string
	ui        bool
	resources []mcp.Resource
	caps      *mcp.ServerCapabilities
	setup     func(*mcp.Server)
}

// lcSpecTools is the server of the tools notice tests: echo, report and
// ops, no resources.
var lcSpecTools = lcSpec{tools: []string{"echo", "report", "ops"}}

// server builds the server of sp, w its watch.
func (sp lcSpec) server(w *lcWatch) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "lc", Version: "1"}, &mcp.ServerOptions{Capabilities: sp.caps})
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil }
	for _, name := range sp.tools {
		tl := &mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: ro}
		if sp.ui && name == "report_app" {
			tl.Meta = mcp.Meta{"ui": map[string]any{"resourceUri": rnUI}}
		}
		srv.AddTool(tl, ok)
	}
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
	}
	for _, res := range sp.resources {
		srv.AddResource(&res, read)
	}
	srv.AddSendingMiddleware(w.middleware)
	if sp.setup != nil {
		sp.setup(srv)
	}
	return srv
}

// lcPanicOn is an lcSpec's setup that adds a sending middleware which
// panics on a notification of method to the session victim holds.
func lcPanicOn(method string, victim *atomic.Pointer[mcp.ServerSession]) func(*mcp.Server) {
	return func(srv *mcp.Server) {
		srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, m string, req mcp.Request) (mcp.Result, error) {
				if m == method && req.GetSession() == victim.Load() {
					panic("a logging middleware's bug")
				}
				return next(ctx, m, req)
			}
		})
	}
}

// lcLists says what a rig's client lists when it connects, and has a
// handler for the changes of.
type lcLists int

const (
	lcListTools lcLists = 1 << iota
	lcListRes
)

// An lcSession is a rig's server session and its client's.
type lcSession struct {
	ss         *mcp.ServerSession // nil over HTTP
	cs         *mcp.ClientSession
	toolsHeard atomic.Int64 // tools/list_changed its client heard
	resHeard   atomic.Int64 // resources/list_changed its client heard
}

// An lcRig is a server with a guard installed and a watch on what it
// sends, its clients on protocol v (in memory, or over Streamable HTTP).
type lcRig struct {
	t         *testing.T
	srv       *mcp.Server
	g         *mcpguard.Guard
	auth      *sessionAuth // in memory: the identity of each session
	w         *lcWatch
	v         string
	hs        *httptest.Server // over HTTP
	stateless bool             // hs is stateless
}

// newLCRig is the server of spec with a guard installed under pol, its
// clients connected in memory on protocol v.
func newLCRig(t *testing.T, v string, pol *policy.Policy, spec lcSpec) *lcRig {
	t.Helper()
	r := &lcRig{t: t, v: v, auth: &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}}
	r.install(pol, spec, r.auth)
	return r
}

// newLCHTTPRig is the server of spec with a guard installed under pol, which
// takes the caller named by the X-User header, served over Streamable
// HTTP (stateless or not) to clients on protocol v.
func newLCHTTPRig(t *testing.T, v string, stateless bool, pol *policy.Policy, spec lcSpec) *lcRig {
	t.Helper()
	r := &lcRig{t: t, v: v, stateless: stateless}
	r.install(pol, spec, lcHeaderAuth{})
	r.hs = httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return r.srv }, &mcp.StreamableHTTPOptions{Stateless: stateless}))
	t.Cleanup(r.hs.Close) // after the clients' Close (cleanups run last first)
	return r
}

func (r *lcRig) install(pol *policy.Policy, spec lcSpec, auth mcpguard.Authenticator) {
	r.t.Helper()
	r.w = newLCWatch()
	r.srv = spec.server(r.w)
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Logger: quiet})
	if err != nil {
		r.t.Fatal(err)
	}
	if err := g.Install(r.srv); err != nil {
		r.t.Fatal(err)
	}
	r.g = g
}

// bind has the requests of ss come from id.
func (r *lcRig) bind(ss *mcp.ServerSession, id *mcpguard.Identity) {
	r.auth.mu.Lock()
	r.auth.ids[ss] = id
	r.auth.mu.Unlock()
}

// clientOptions has a handler that counts into s for the changes of each
// kind l lists.
func (s *lcSession) clientOptions(l lcLists) *mcp.ClientOptions {
	copts := &mcp.ClientOptions{}
	if l&lcListRes != 0 {
		copts.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) { s.resHeard.Add(1) }
	}
	if l&lcListTools != 0 {
		copts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { s.toolsHeard.Add(1) }
	}
	return copts
}

// list lists what l says: the resources, then the tools.
func (s *lcSession) list(t *testing.T, l lcLists) {
	t.Helper()
	if l&lcListRes != 0 {
		s.uris(t)
	}
	if l&lcListTools != 0 {
		s.names(t)
	}
}

// dial connects a client as id in memory on protocol v, with a handler for
// the changes of each kind l lists, and lists nothing.
func (r *lcRig) dial(id *mcpguard.Identity, v string, l lcLists) *lcSession {
	t := r.t
	t.Helper()
	s := &lcSession{}
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := r.srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.ss = ss
	r.bind(ss, id)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, s.clientOptions(l)).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		t.Fatal(err)
	}
	s.cs = cs
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return s
}

// connect connects a client as id, that lists what l says. On the default
// protocol its client listens for the changes of the tools it lists, and of
// the resources it lists if the server's capabilities say they change
// (without either, it opens no listen): connect waits for the listen first.
func (r *lcRig) connect(id *mcpguard.Identity, l lcLists) *lcSession {
	t := r.t
	t.Helper()
	s := r.dial(id, r.v, l)
	caps := s.cs.InitializeResult().Capabilities
	resListen := l&lcListRes != 0 && caps.Resources != nil && caps.Resources.ListChanged
	if r.v == "" && (l&lcListTools != 0 || resListen) {
		waitFor(t, func() bool { return r.w.ackedOn(s.ss) })
	}
	s.list(t, l)
	return s
}

// lcHTTPCases are the servers of the Streamable HTTP tests: a stateful
// one with clients on 2025-11-25 (their standalone streams), and a
// stateless one with clients on the default protocol (their listen
// streams).
var lcHTTPCases = []struct {
	name      string
	v         string
	stateless bool
}{{"stateful_2025-11-25", "2025-11-25", false}, {"stateless_default", "", true}}

// connectHTTPPair connects alice's client and then bob's over the rig's
// HTTP server, each listing what l says; on a stateless server it then
// waits for both listens.
func (r *lcRig) connectHTTPPair(l lcLists) (alice, bob *lcSession) {
	r.t.Helper()
	alice, bob = r.connectHTTP("alice", l), r.connectHTTP("bob", l)
	if r.stateless {
		waitFor(r.t, func() bool { return r.w.acks() >= 2 })
	}
	return alice, bob
}

// connectHTTP connects a client as user over the rig's HTTP server, that
// lists what l says (waiting for no listen).
func (r *lcRig) connectHTTP(user string, l lcLists) *lcSession {
	t := r.t
	t.Helper()
	s := &lcSession{}
	tr := &mcp.StreamableClientTransport{Endpoint: r.hs.URL, HTTPClient: &http.Client{Transport: lcUserHeader{user}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, s.clientOptions(l)).Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: r.v})
	if err != nil {
		t.Fatal(err)
	}
	s.cs = cs
	t.Cleanup(func() { cs.Close() })
	s.list(t, l)
	return s
}

func (s *lcSession) names(t *testing.T) []string {
	t.Helper()
	res, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	slices.Sort(out)
	return out
}

func (s *lcSession) uris(t *testing.T) []string {
	t.Helper()
	res, err := s.cs.ListResources(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range res.Resources {
		out = append(out, r.URI)
	}
	slices.Sort(out)
	return out
}

func (r *lcRig) setPolicy(p *policy.Policy) {
	r.t.Helper()
	if err := r.g.SetPolicy(p); err != nil {
		r.t.Fatal(err)
	}
}

// churn sets pa and pu in turn, 41 policies from pa to pa, while s lists
// what l says over and over.
func (r *lcRig) churn(s *lcSession, l lcLists, pu, pa *policy.Policy) {
	r.t.Helper()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		ctx := context.Background()
		for {
			select {
			case <-stop:
				return
			default:
			}
			var err error
			if l&lcListRes != 0 {
				_, err = s.cs.ListResources(ctx, nil)
			}
			if err == nil && l&lcListTools != 0 {
				_, err = s.cs.ListTools(ctx, nil)
			}
			if err != nil {
				r.t.Error(err)
				return
			}
		}
	}()
	for i := range 40 {
		if i%2 == 0 {
			r.setPolicy(pa)
		} else {
			r.setPolicy(pu)
		}
	}
	r.setPolicy(pa)
	close(stop)
	wg.Wait()
}

// waitTools waits until s has been sent n tools/list_changed notifications
// in all, and its client heard them, and fails if it was sent more.
func (r *lcRig) waitTools(s *lcSession, n int) {
	r.t.Helper()
	r.waitSent(s, n, r.w.toolsCount, &s.toolsHeard, "tools/list_changed notifications")
}

// waitRes waits until s has been sent n resources/list_changed in all, and
// its client heard them, and fails if it was sent more.
func (r *lcRig) waitRes(s *lcSession, n int) {
	r.t.Helper()
	r.waitSent(s, n, r.w.resCount, &s.resHeard, "resources/list_changed")
}

func (r *lcRig) waitSent(s *lcSession, n int, sent func(*mcp.ServerSession) int, heard *atomic.Int64, what string) {
	r.t.Helper()
	waitFor(r.t, func() bool { return sent(s.ss) >= n && heard.Load() >= int64(n) })
	if got := sent(s.ss); got != n {
		r.t.Fatalf("the session was sent %d %s, want %d", got, what, n)
	}
}

// TestReview31SetPolicyTellsSessions: under Install, SetPolicy sends
// tools/list_changed to each session whose caller's visible tools changed
// since it last listed them (or was told), and to no other: not to one
// whose tools did not change, nor to one that never listed, nor for an
// identical policy, nor for a change to a tool the caller cannot see. The
// guard sends in the order the server holds its sessions, so once the last
// session heard, the counts of those before it are final.
func TestReview31SetPolicyTellsSessions(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			p1 := lcPolicy(t, "user")
			r := newLCRig(t, v, p1, lcSpecTools)
			admin := r.connect(alice, lcListTools)
			silent := r.connect(bob, 0)
			user := r.connect(bob, lcListTools)
			if got := user.names(t); !slices.Equal(got, []string{"echo", "report"}) {
				t.Fatalf("bob lists %v under p1", got)
			}

			// bob loses report; alice (user and admin) sees the same tools.
			p2 := lcPolicy(t, "admin")
			r.setPolicy(p2)
			r.waitTools(user, 1)
			if got := user.names(t); !slices.Equal(got, []string{"echo"}) {
				t.Errorf("bob lists %v after being told of p2, want [echo]", got)
			}
			if n := r.w.toolsCount(admin.ss); n != 0 {
				t.Errorf("alice, whose tools did not change, was sent %d notifications", n)
			}
			if n := r.w.toolsCount(silent.ss); n != 0 {
				t.Errorf("a session that never listed was sent %d notifications", n)
			}

			// The same policy, an identical one, and one that changes only
			// a tool bob cannot see before or after (ops, now also for
			// auditors) tell nobody; then one that gives report back to
			// bob tells him, after anything the others sent.
			r.setPolicy(p2)
			r.setPolicy(lcPolicy(t, "admin"))
			hidden, err := policy.New(policy.Config{Tools: []policy.ToolRule{
				{Name: "echo", Class: policy.Read},
				{Name: "report", Class: policy.Read, Roles: []string{"admin"}},
				{Name: "ops", Class: policy.Read, Roles: []string{"admin", "auditor"}},
			}})
			if err != nil {
				t.Fatal(err)
			}
			r.setPolicy(hidden)
			r.setPolicy(lcPolicy(t, "user"))
			r.waitTools(user, 2)
			if got := user.names(t); !slices.Equal(got, []string{"echo", "report"}) {
				t.Errorf("bob lists %v after report came back, want [echo report]", got)
			}
			if n := r.w.toolsCount(admin.ss); n != 0 {
				t.Errorf("alice was sent %d notifications", n)
			}
			if n := r.w.toolsCount(silent.ss); n != 0 {
				t.Errorf("a session that never listed was sent %d notifications", n)
			}
		})
	}
}

// TestReview31SetPolicyQuickSuccession: policies set in quick succession,
// while sessions list, end with each session told of its last change:
// its next listing is the last policy's, and a session whose tools never
// changed is told nothing.
func TestReview31SetPolicyQuickSuccession(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			pu, pa := lcPolicy(t, "user"), lcPolicy(t, "admin")
			r := newLCRig(t, v, pu, lcSpecTools)
			admin := r.connect(alice, lcListTools)
			users := []*lcSession{r.connect(bob, lcListTools), r.connect(bob, lcListTools)}
			r.churn(users[0], lcListTools, pu, pa) // a session listing meanwhile
			// users[1] listed under pu only: it must be told.
			waitFor(t, func() bool { return users[1].toolsHeard.Load() >= 1 })
			for i, u := range users {
				if got := u.names(t); !slices.Equal(got, []string{"echo"}) {
					t.Errorf("session %d lists %v, want [echo]", i, got)
				}
			}
			// A last change for bob only, sent after anything else.
			n := r.w.toolsCount(users[1].ss)
			r.setPolicy(pu)
			r.waitTools(users[1], n+1)
			if n := r.w.toolsCount(admin.ss); n != 0 {
				t.Errorf("alice, whose tools never changed, was sent %d notifications", n)
			}
		})
	}
}

// TestReview31SetPolicyStreamable: the same over Streamable HTTP: a
// stateful server with clients on 2025-11-25 (their standalone streams)
// and a stateless one with clients on the default protocol (their listen
// streams). The wire counts are the server's, all sessions together: when
// bob's client has heard, what alice's session was sent is counted.
func TestReview31SetPolicyStreamable(t *testing.T) {
	for _, tc := range lcHTTPCases {
		t.Run(tc.name, func(t *testing.T) {
			r := newLCHTTPRig(t, tc.v, tc.stateless, lcPolicy(t, "user"), lcSpecTools)
			alice, bob := r.connectHTTPPair(lcListTools)
			r.setPolicy(lcPolicy(t, "admin"))
			waitFor(t, func() bool { return bob.toolsHeard.Load() == 1 })
			if n, _ := r.w.totals(); n != 1 {
				t.Errorf("the server sent %d tools/list_changed notifications, want 1 (bob's)", n)
			}
			res, err := bob.cs.ListTools(context.Background(), nil)
			if err != nil || len(res.Tools) != 1 || res.Tools[0].Name != "echo" {
				t.Errorf("bob's listing after the notification: %v, %v; want [echo]", res, err)
			}
			if n := alice.toolsHeard.Load(); n != 0 {
				t.Errorf("alice heard %d notifications", n)
			}
			r.w.mu.Lock()
			defer r.w.mu.Unlock()
			if want := map[bool]int{true: 1}[tc.stateless]; r.w.toolsSubID != want {
				t.Errorf("%d notifications carried a listen's subscriptionId, want %d (on its listen, as the go-sdk sends)", r.w.toolsSubID, want)
			}
		})
	}
}

// lcHeaderAuth authenticates the caller named by the X-User header.
type lcHeaderAuth struct{}

func (lcHeaderAuth) Authenticate(ctx context.Context, req mcp.Request) (*mcpguard.Identity, error) {
	if ex := req.GetExtra(); ex != nil && ex.Header != nil {
		switch ex.Header.Get("X-User") {
		case "alice":
			return alice, nil
		case "bob":
			return bob, nil
		}
	}
	return nil, mcpguard.Deny(mcpguard.CodeUnauthenticated, "who?")
}

// lcUserHeader sets X-User on each request.
type lcUserHeader struct{ user string }

func (u lcUserHeader) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("X-User", u.user)
	return http.DefaultTransport.RoundTrip(req)
}

// TestReview31SetPolicyWithoutInstall: a guard that only wraps handlers
// (Guard.AddTool) filters no listing, so no listing changes with its
// policy: SetPolicy sends nothing.
func TestReview31SetPolicyWithoutInstall(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "lc", Version: "1"}, nil)
	g, err := mcpguard.New(lcPolicy(t, "user"), fixed(bob), &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil }
	for _, name := range []string{"echo", "report"} {
		if err := g.AddTool(srv, &mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: ro}, ok); err != nil {
			t.Fatal(err)
		}
	}
	var heard atomic.Int64
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { heard.Add(1) },
	}).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cs.Close(); ss.Close() }()
	res, err := cs.ListTools(ctx, nil)
	if err != nil || len(res.Tools) != 2 {
		t.Fatalf("ListTools: %v, %v", res, err)
	}
	if err := g.SetPolicy(lcPolicy(t, "admin")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := heard.Load(); n != 0 {
		t.Errorf("SetPolicy without Install sent %d tools/list_changed notifications", n)
	}
	if res, err := cs.ListTools(ctx, nil); err != nil || len(res.Tools) != 2 {
		t.Errorf("ListTools after SetPolicy: %v, %v: the guard filters no listing without Install", res, err)
	}
}
