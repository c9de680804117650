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

// lcWatch counts, per server session, the tools/list_changed notifications
// that reach the wire (a sending middleware added before Install: below
// the guard) and the subscriptions/listen acknowledgements.
type lcWatch struct {
	mu    sync.Mutex
	sent  map[*mcp.ServerSession]int
	acked map[*mcp.ServerSession]bool
	subID int // list_changed notifications stamped with a listen's subscriptionId
}

func newLCWatch() *lcWatch {
	return &lcWatch{sent: map[*mcp.ServerSession]int{}, acked: map[*mcp.ServerSession]bool{}}
}

func (w *lcWatch) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		w.mu.Lock()
		switch method {
		case "notifications/tools/list_changed":
			w.sent[ss]++
			if p, _ := req.GetParams().(*mcp.ToolListChangedParams); p != nil && p.Meta[mcp.MetaKeySubscriptionID] != nil {
				w.subID++
			}
		case "notifications/subscriptions/acknowledged":
			w.acked[ss] = true
		}
		w.mu.Unlock()
		return next(ctx, method, req)
	}
}

func (w *lcWatch) count(ss *mcp.ServerSession) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sent[ss]
}

type lcSession struct {
	ss    *mcp.ServerSession
	cs    *mcp.ClientSession
	heard atomic.Int64 // tools/list_changed notifications the client got
}

type lcRig struct {
	t    *testing.T
	srv  *mcp.Server
	g    *mcpguard.Guard
	auth *sessionAuth
	w    *lcWatch
	v    string
}

func newLCRig(t *testing.T, v string, pol *policy.Policy) *lcRig {
	t.Helper()
	r := &lcRig{t: t, v: v, auth: &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}, w: newLCWatch()}
	r.srv = mcp.NewServer(&mcp.Implementation{Name: "lc", Version: "1"}, nil)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil }
	for _, name := range []string{"echo", "report", "ops"} {
		r.srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: ro}, ok)
	}
	r.srv.AddSendingMiddleware(r.w.middleware)
	g, err := mcpguard.New(pol, r.auth, &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(r.srv); err != nil {
		t.Fatal(err)
	}
	r.g = g
	return r
}

// connect connects a client as id; it lists the tools if list is set, and
// on the default protocol waits for the listen its client opens then (a
// listen for tools/list_changed shows the session the tools as a listing
// does: without list, its client opens none).
func (r *lcRig) connect(id *mcpguard.Identity, list bool) *lcSession {
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
	r.auth.mu.Lock()
	r.auth.ids[ss] = id
	r.auth.mu.Unlock()
	var copts *mcp.ClientOptions
	if list {
		copts = &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { s.heard.Add(1) },
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, copts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: r.v})
	if err != nil {
		t.Fatal(err)
	}
	s.cs = cs
	t.Cleanup(func() { cs.Close(); ss.Close() })
	if r.v == "" && list {
		waitFor(t, func() bool { r.w.mu.Lock(); defer r.w.mu.Unlock(); return r.w.acked[ss] })
	}
	if list {
		s.names(t)
	}
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

func (r *lcRig) setPolicy(p *policy.Policy) {
	r.t.Helper()
	if err := r.g.SetPolicy(p); err != nil {
		r.t.Fatal(err)
	}
}

// waitSent waits until ss has been sent n tools/list_changed notifications
// in all, and its client heard them.
func (r *lcRig) waitSent(s *lcSession, n int) {
	r.t.Helper()
	waitFor(r.t, func() bool { return r.w.count(s.ss) >= n && s.heard.Load() >= int64(n) })
	if got := r.w.count(s.ss); got != n {
		r.t.Fatalf("the session was sent %d tools/list_changed notifications, want %d", got, n)
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
			r := newLCRig(t, v, p1)
			admin := r.connect(alice, true)
			silent := r.connect(bob, false)
			user := r.connect(bob, true)
			if got := user.names(t); !slices.Equal(got, []string{"echo", "report"}) {
				t.Fatalf("bob lists %v under p1", got)
			}

			// bob loses report; alice (user and admin) sees the same tools.
			p2 := lcPolicy(t, "admin")
			r.setPolicy(p2)
			r.waitSent(user, 1)
			if got := user.names(t); !slices.Equal(got, []string{"echo"}) {
				t.Errorf("bob lists %v after being told of p2, want [echo]", got)
			}
			if n := r.w.count(admin.ss); n != 0 {
				t.Errorf("alice, whose tools did not change, was sent %d notifications", n)
			}
			if n := r.w.count(silent.ss); n != 0 {
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
			r.waitSent(user, 2)
			if got := user.names(t); !slices.Equal(got, []string{"echo", "report"}) {
				t.Errorf("bob lists %v after report came back, want [echo report]", got)
			}
			if n := r.w.count(admin.ss); n != 0 {
				t.Errorf("alice was sent %d notifications", n)
			}
			if n := r.w.count(silent.ss); n != 0 {
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
			r := newLCRig(t, v, pu)
			admin := r.connect(alice, true)
			users := []*lcSession{r.connect(bob, true), r.connect(bob, true)}
			var wg sync.WaitGroup
			stop := make(chan struct{})
			wg.Add(1)
			go func() { // a session listing meanwhile
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := users[0].cs.ListTools(context.Background(), nil); err != nil {
						t.Error(err)
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
			// users[1] listed under pu only: it must be told.
			waitFor(t, func() bool { return users[1].heard.Load() >= 1 })
			for i, u := range users {
				if got := u.names(t); !slices.Equal(got, []string{"echo"}) {
					t.Errorf("session %d lists %v, want [echo]", i, got)
				}
			}
			// A last change for bob only, sent after anything else.
			n := r.w.count(users[1].ss)
			r.setPolicy(pu)
			r.waitSent(users[1], n+1)
			if n := r.w.count(admin.ss); n != 0 {
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
	for _, tc := range []struct {
		name      string
		v         string
		stateless bool
	}{{"stateful_2025-11-25", "2025-11-25", false}, {"stateless_default", "", true}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newLCWatch()
			g, err := mcpguard.New(lcPolicy(t, "user"), lcHeaderAuth{}, &mcpguard.Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			srv := mcp.NewServer(&mcp.Implementation{Name: "lc", Version: "1"}, nil)
			ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
			ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil }
			for _, name := range []string{"echo", "report", "ops"} {
				srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: ro}, ok)
			}
			srv.AddSendingMiddleware(w.middleware)
			if err := g.Install(srv); err != nil {
				t.Fatal(err)
			}
			hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: tc.stateless}))
			t.Cleanup(hs.Close) // after the clients' Close (cleanups run last first)
			connect := func(user string) (*mcp.ClientSession, *atomic.Int64) {
				heard := &atomic.Int64{}
				tr := &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: lcUserHeader{user}}, MaxRetries: -1}
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
					ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { heard.Add(1) },
				}).Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: tc.v})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cs.Close() })
				if _, err := cs.ListTools(context.Background(), nil); err != nil {
					t.Fatal(err)
				}
				return cs, heard
			}
			_, aliceHeard := connect("alice")
			bobCS, bobHeard := connect("bob")
			if tc.stateless {
				waitFor(t, func() bool { w.mu.Lock(); defer w.mu.Unlock(); return len(w.acked) >= 2 })
			}
			total := func() int {
				w.mu.Lock()
				defer w.mu.Unlock()
				n := 0
				for _, c := range w.sent {
					n += c
				}
				return n
			}
			if err := g.SetPolicy(lcPolicy(t, "admin")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool { return bobHeard.Load() == 1 })
			if n := total(); n != 1 {
				t.Errorf("the server sent %d tools/list_changed notifications, want 1 (bob's)", n)
			}
			res, err := bobCS.ListTools(context.Background(), nil)
			if err != nil || len(res.Tools) != 1 || res.Tools[0].Name != "echo" {
				t.Errorf("bob's listing after the notification: %v, %v; want [echo]", res, err)
			}
			if n := aliceHeard.Load(); n != 0 {
				t.Errorf("alice heard %d notifications", n)
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if want := map[bool]int{true: 1}[tc.stateless]; w.subID != want {
				t.Errorf("%d notifications carried a listen's subscriptionId, want %d (on its listen, as the go-sdk sends)", w.subID, want)
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
