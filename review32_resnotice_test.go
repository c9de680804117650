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

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The UI resource of rnApp, a tool whose rule SetPolicy changes.
const rnUI = "ui://report/app"

// rnPolicy is the policy of the resources notice tests: echo for every
// caller, report_app (whose UI resource is rnUI) for appRoles.
func rnPolicy(t *testing.T, appRoles ...string) *policy.Policy {
	t.Helper()
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{
		{Name: "echo", Class: policy.Read},
		{Name: "report_app", Class: policy.Read, Roles: appRoles},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// rnWatch counts, per server session, the list_changed notifications that
// reach the wire (a sending middleware added before Install), those
// stamped with a listen's subscriptionId, and the listens acknowledged.
type rnWatch struct {
	mu    sync.Mutex
	res   map[*mcp.ServerSession]int
	tools map[*mcp.ServerSession]int
	acked map[*mcp.ServerSession]bool
	subID int // resources/list_changed stamped with a subscriptionId
}

func newRNWatch() *rnWatch {
	return &rnWatch{res: map[*mcp.ServerSession]int{}, tools: map[*mcp.ServerSession]int{}, acked: map[*mcp.ServerSession]bool{}}
}

func (w *rnWatch) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		w.mu.Lock()
		switch method {
		case "notifications/resources/list_changed":
			w.res[ss]++
			if p, _ := req.GetParams().(*mcp.ResourceListChangedParams); p != nil && p.Meta[mcp.MetaKeySubscriptionID] != nil {
				w.subID++
			}
		case "notifications/tools/list_changed":
			w.tools[ss]++
		case "notifications/subscriptions/acknowledged":
			w.acked[ss] = true
		}
		w.mu.Unlock()
		return next(ctx, method, req)
	}
}

func (w *rnWatch) resCount(ss *mcp.ServerSession) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.res[ss]
}

// rnServer is a server with echo and report_app; with resources, it has
// rnUI and a plain resource. caps are its ServerOptions' capabilities.
func rnServer(w *rnWatch, resources bool, caps *mcp.ServerCapabilities) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "rn", Version: "1"}, &mcp.ServerOptions{Capabilities: caps})
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil }
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: ro}, ok)
	srv.AddTool(&mcp.Tool{Name: "report_app", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: ro,
		Meta: mcp.Meta{"ui": map[string]any{"resourceUri": rnUI}}}, ok)
	if resources {
		read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
		}
		srv.AddResource(&mcp.Resource{URI: rnUI, Name: "app", MIMEType: "text/html;profile=mcp-app"}, read)
		srv.AddResource(&mcp.Resource{URI: "file:///plain.txt", Name: "plain"}, read)
	}
	srv.AddSendingMiddleware(w.middleware)
	return srv
}

type rnSession struct {
	ss       *mcp.ServerSession
	cs       *mcp.ClientSession
	resHeard atomic.Int64
	tlHeard  atomic.Int64
}

type rnRig struct {
	t    *testing.T
	srv  *mcp.Server
	g    *mcpguard.Guard
	auth *sessionAuth
	w    *rnWatch
	v    string
}

func newRNRig(t *testing.T, v string, pol *policy.Policy, resources bool, caps *mcp.ServerCapabilities) *rnRig {
	t.Helper()
	r := &rnRig{t: t, v: v, auth: &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}, w: newRNWatch()}
	r.srv = rnServer(r.w, resources, caps)
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

// connect connects a client as id. With listRes it lists the resources
// (and, on the default protocol, its client listens for their changes);
// with listTools it lists the tools (and listens for theirs).
func (r *rnRig) connect(id *mcpguard.Identity, listRes, listTools bool) *rnSession {
	t := r.t
	t.Helper()
	s := &rnSession{}
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
	copts := &mcp.ClientOptions{}
	if listRes {
		copts.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) { s.resHeard.Add(1) }
	}
	if listTools {
		copts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { s.tlHeard.Add(1) }
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, copts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: r.v})
	if err != nil {
		t.Fatal(err)
	}
	s.cs = cs
	t.Cleanup(func() { cs.Close(); ss.Close() })
	caps := cs.InitializeResult().Capabilities
	resListen := listRes && caps.Resources != nil && caps.Resources.ListChanged
	if r.v == "" && (listTools || resListen) { // its client opens a listen
		waitFor(t, func() bool { r.w.mu.Lock(); defer r.w.mu.Unlock(); return r.w.acked[ss] })
	}
	if listRes {
		s.uris(t)
	}
	if listTools {
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func (s *rnSession) uris(t *testing.T) []string {
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

func (r *rnRig) setPolicy(p *policy.Policy) {
	r.t.Helper()
	if err := r.g.SetPolicy(p); err != nil {
		r.t.Fatal(err)
	}
}

// waitRes waits until s has been sent n resources/list_changed in all, and
// its client heard them, and fails if it was sent more.
func (r *rnRig) waitRes(s *rnSession, n int) {
	r.t.Helper()
	waitFor(r.t, func() bool { return r.w.resCount(s.ss) >= n && s.resHeard.Load() >= int64(n) })
	if got := r.w.resCount(s.ss); got != n {
		r.t.Fatalf("the session was sent %d resources/list_changed, want %d", got, n)
	}
}

// TestReview32SetPolicyTellsResourceListings: under Install, a SetPolicy
// that hides (or shows) a tool hides (or shows) its UI resource, and the
// session whose caller's resources/list so changed is sent one
// notifications/resources/list_changed (on the default protocol on its
// listen, stamped with its subscriptionId); a session whose caller sees
// the same resources, one that never listed them, and an identical policy
// tell nothing. A sentinel session connected last (the guard sends in the
// server's order of its sessions) bounds the negative checks.
func TestReview32SetPolicyTellsResourceListings(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			pu, pa := rnPolicy(t, "user"), rnPolicy(t, "admin")
			r := newRNRig(t, v, pu, true, nil)
			admin := r.connect(alice, true, false)
			silent := r.connect(bob, false, false)
			user := r.connect(bob, true, false)
			if got := user.uris(t); !slices.Equal(got, []string{"file:///plain.txt", rnUI}) {
				t.Fatalf("bob lists %v under pu", got)
			}

			r.setPolicy(pa)
			r.waitRes(user, 1)
			if got := user.uris(t); !slices.Equal(got, []string{"file:///plain.txt"}) {
				t.Errorf("bob lists %v after being told of pa, want the plain resource only", got)
			}
			if n := r.w.resCount(admin.ss); n != 0 {
				t.Errorf("alice, whose resources did not change, was sent %d resources/list_changed", n)
			}
			if n := r.w.resCount(silent.ss); n != 0 {
				t.Errorf("a session that never listed the resources was sent %d", n)
			}

			// The same policy and an identical one tell nobody; then the
			// resource comes back for bob: told once more.
			r.setPolicy(pa)
			r.setPolicy(rnPolicy(t, "admin"))
			r.setPolicy(pu)
			r.waitRes(user, 2)
			if got := user.uris(t); !slices.Equal(got, []string{"file:///plain.txt", rnUI}) {
				t.Errorf("bob lists %v after rnUI came back", got)
			}
			if n := r.w.resCount(admin.ss); n != 0 {
				t.Errorf("alice was sent %d resources/list_changed", n)
			}
			if n := r.w.resCount(silent.ss); n != 0 {
				t.Errorf("a session that never listed the resources was sent %d", n)
			}
			r.w.mu.Lock()
			defer r.w.mu.Unlock()
			if want := map[bool]int{true: 2}[v == ""]; r.w.subID != want {
				t.Errorf("%d resources/list_changed carried a subscriptionId, want %d", r.w.subID, want)
			}
		})
	}
}

// TestReview32SetPolicyResourcesQuiet: no resources/list_changed for a
// new policy where the go-sdk sends none of its own: a server without
// resources (its listing cannot change), and one whose capabilities turn
// resources' listChanged off. A sentinel session connected last, whose
// tools change, bounds the check.
func TestReview32SetPolicyResourcesQuiet(t *testing.T) {
	for _, tc := range []struct {
		name      string
		resources bool
		caps      *mcp.ServerCapabilities
	}{
		{"no_resources", false, nil},
		{"list_changed_off", true, &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: false},
		}},
	} {
		for _, v := range protocolVersions {
			t.Run(tc.name+"_"+versionName(v), func(t *testing.T) {
				pu, pa := rnPolicy(t, "user"), rnPolicy(t, "admin")
				r := newRNRig(t, v, pu, tc.resources, tc.caps)
				user := r.connect(bob, true, false)
				sentinel := r.connect(bob, false, true)
				r.setPolicy(pa)
				waitFor(t, func() bool { return sentinel.tlHeard.Load() >= 1 })
				if n := r.w.resCount(user.ss); n != 0 {
					t.Errorf("the session was sent %d resources/list_changed", n)
				}
			})
		}
	}
}

// TestReview32SetPolicyResourcesStreamable: over Streamable HTTP, a
// stateless server with clients on the default protocol (their listen
// streams) and a stateful one on 2025-11-25: bob, whose resources change,
// is told once; alice is told nothing.
func TestReview32SetPolicyResourcesStreamable(t *testing.T) {
	for _, tc := range []struct {
		name      string
		v         string
		stateless bool
	}{{"stateful_2025-11-25", "2025-11-25", false}, {"stateless_default", "", true}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newRNWatch()
			srv := rnServer(w, true, nil)
			g, err := mcpguard.New(rnPolicy(t, "user"), lcHeaderAuth{}, &mcpguard.Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Install(srv); err != nil {
				t.Fatal(err)
			}
			hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: tc.stateless}))
			t.Cleanup(hs.Close)
			connect := func(user string) (*mcp.ClientSession, *atomic.Int64) {
				heard := &atomic.Int64{}
				tr := &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: lcUserHeader{user}}, MaxRetries: -1}
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
					ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { heard.Add(1) },
				}).Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: tc.v})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cs.Close() })
				if _, err := cs.ListResources(context.Background(), nil); err != nil {
					t.Fatal(err)
				}
				return cs, heard
			}
			_, aliceHeard := connect("alice")
			bobCS, bobHeard := connect("bob")
			if tc.stateless {
				waitFor(t, func() bool { w.mu.Lock(); defer w.mu.Unlock(); return len(w.acked) >= 2 })
			}
			if err := g.SetPolicy(rnPolicy(t, "admin")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool { return bobHeard.Load() == 1 })
			res, err := bobCS.ListResources(context.Background(), nil)
			if err != nil || len(res.Resources) != 1 || res.Resources[0].URI != "file:///plain.txt" {
				t.Errorf("bob's listing after the notification: %v, %v", res, err)
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			n := 0
			for _, c := range w.res {
				n += c
			}
			if n != 1 {
				t.Errorf("the server sent %d resources/list_changed, want 1 (bob's)", n)
			}
			if n := aliceHeard.Load(); n != 0 {
				t.Errorf("alice heard %d resources/list_changed", n)
			}
			if want := map[bool]int{true: 1}[tc.stateless]; w.subID != want {
				t.Errorf("%d carried a subscriptionId, want %d", w.subID, want)
			}
		})
	}
}

// TestReview32SetPolicyResourcesQuickSuccession: policies set in quick
// succession while a session lists the resources end with each session
// told of its last change: its next listing is the last policy's.
func TestReview32SetPolicyResourcesQuickSuccession(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			pu, pa := rnPolicy(t, "user"), rnPolicy(t, "admin")
			r := newRNRig(t, v, pu, true, nil)
			admin := r.connect(alice, true, false)
			users := []*rnSession{r.connect(bob, true, false), r.connect(bob, true, false)}
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
					if _, err := users[0].cs.ListResources(context.Background(), nil); err != nil {
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
			waitFor(t, func() bool { return users[1].resHeard.Load() >= 1 })
			// Each lists the last policy's resources: on the default
			// protocol its client caches the listing until it is told.
			for _, u := range users {
				waitFor(t, func() bool { return slices.Equal(u.uris(t), []string{"file:///plain.txt"}) })
			}
			n := r.w.resCount(users[1].ss)
			r.setPolicy(pu)
			r.waitRes(users[1], n+1)
			if n := r.w.resCount(admin.ss); n != 0 {
				t.Errorf("alice, whose resources never changed, was sent %d", n)
			}
		})
	}
}

// TestReview32PanickingResourceNoticeTellsTheRest: a sending middleware
// below the guard that panics on one session's resources/list_changed
// keeps no later session from being told.
func TestReview32PanickingResourceNoticeTellsTheRest(t *testing.T) {
	pu, pa := rnPolicy(t, "user"), rnPolicy(t, "admin")
	r := &rnRig{t: t, v: "2025-11-25", auth: &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}, w: newRNWatch()}
	r.srv = rnServer(r.w, true, nil)
	var victim atomic.Pointer[mcp.ServerSession]
	r.srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/resources/list_changed" && req.GetSession() == victim.Load() {
				panic("a logging middleware's bug")
			}
			return next(ctx, method, req)
		}
	})
	g, err := mcpguard.New(pu, r.auth, &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(r.srv); err != nil {
		t.Fatal(err)
	}
	r.g = g
	first := r.connect(bob, true, false)
	victim.Store(first.ss)
	second := r.connect(bob, true, false)
	r.setPolicy(pa)
	r.waitRes(second, 1)
	r.setPolicy(pu)
	r.waitRes(second, 2)
}
