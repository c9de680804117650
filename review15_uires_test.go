package mcpguard_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An MCP Apps tool (SEP-1865) names its UI resource in its _meta, as
// _meta.ui.resourceUri or under the older flat key "ui/resourceUri". A UI
// resource of a tool a caller may not see would reveal the tool (and may
// carry its UI): it must look to that caller like a resource the server
// does not have.
const (
	uiAdmin  = "ui://admin/app"    // admin_app's, as _meta.ui.resourceUri
	uiLegacy = "ui://admin/legacy" // admin_legacy's, under "ui/resourceUri"
	uiTpl    = "ui://tpl/admin"    // admin_tpl's, served by a template
	uiOpen   = "ui://open/app"     // open_app's: every caller sees it
	uiLater  = "ui://later/app"    // plain until admin_later names it
	plainURI = "file:///plain.txt" // named by no tool
)

func uiPolicy() policy.Config {
	cfg := basePolicy(false)
	for _, n := range []string{"admin_app", "admin_legacy", "admin_tpl", "admin_later", "admin_extra", "open_app"} {
		cfg.Tools = append(cfg.Tools, policy.ToolRule{Name: n, Class: policy.Read})
	}
	return cfg
}

// uiServer is a server with UI tools and resources. Its SubscribeHandler
// and its template's handler refuse a URI the server does not have with
// the go-sdk's not-found error, as the go-sdk advises a handler to.
type uiServer struct {
	srv *mcp.Server

	mu        sync.Mutex
	have      map[string]bool
	subscribe []string // "subject uri" as the SubscribeHandler saw them
}

var uiSchema = json.RawMessage(`{"type":"object"}`)

func okTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return textResult("ok"), nil
}

func uiTool(name string, meta mcp.Meta) *mcp.Tool {
	return &mcp.Tool{Name: name, InputSchema: uiSchema, Meta: meta, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
}

func nested(uri string) mcp.Meta { return mcp.Meta{"ui": map[string]any{"resourceUri": uri}} }

// newUIServer builds the server; withAdmin adds the admin tools and their
// UI resources (without, it is the server a caller who may not see them
// should seem to talk to).
func newUIServer(pageSize int, withAdmin bool, before func(*mcp.Server)) *uiServer {
	return newUIServerSubs(pageSize, withAdmin, true, before)
}

// newUIServerSubs is newUIServer, without a SubscribeHandler unless subs.
func newUIServerSubs(pageSize int, withAdmin, subs bool, before func(*mcp.Server)) *uiServer {
	u := &uiServer{have: map[string]bool{}}
	sopts := &mcp.ServerOptions{
		PageSize: pageSize,
		SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
			u.mu.Lock()
			defer u.mu.Unlock()
			who := "<nobody>"
			if p := mcpguard.PrincipalFromContext(ctx); p != nil {
				who = p.Subject
			}
			u.subscribe = append(u.subscribe, who+" "+req.Params.URI)
			if !u.have[req.Params.URI] {
				return mcp.ResourceNotFoundError(req.Params.URI)
			}
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	}
	if !subs {
		sopts.SubscribeHandler, sopts.UnsubscribeHandler = nil, nil
	}
	u.srv = mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, sopts)
	addTools(u.srv, &spy{})
	if before != nil {
		before(u.srv)
	}
	u.srv.AddTool(uiTool("open_app", mcp.Meta{"ui": struct {
		ResourceURI string `json:"resourceUri"`
	}{uiOpen}}), okTool)
	u.add(uiOpen)
	u.add(plainURI)
	u.add(uiLater)
	u.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "ui://tpl/{name}", Name: "tpl"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			u.mu.Lock()
			ok := u.have[req.Params.URI]
			u.mu.Unlock()
			if !ok {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "tpl " + req.Params.URI}}}, nil
		})
	if withAdmin {
		u.srv.AddTool(uiTool("admin_app", nested(uiAdmin)), okTool)
		u.srv.AddTool(uiTool("admin_legacy", mcp.Meta{"ui/resourceUri": uiLegacy}), okTool)
		u.srv.AddTool(uiTool("admin_tpl", nested(uiTpl)), okTool)
		u.add(uiAdmin)
		u.add(uiLegacy)
		u.mu.Lock()
		u.have[uiTpl] = true // served by the template
		u.mu.Unlock()
	}
	return u
}

func (u *uiServer) add(uri string) {
	u.mu.Lock()
	u.have[uri] = true
	u.mu.Unlock()
	u.srv.AddResource(&mcp.Resource{URI: uri, Name: uri, MIMEType: "text/html;profile=mcp-app"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "<html>" + req.Params.URI}}}, nil
		})
}

func (u *uiServer) subscribers() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.subscribe...)
}

// guard installs a guard on u and returns a harness for it.
func (u *uiServer) guard(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, srv: u.srv, auth: &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}, sink: &memSink{}, down: &spy{}}
	pol, err := policy.New(uiPolicy())
	if err != nil {
		t.Fatal(err)
	}
	h.g, err = mcpguard.New(pol, h.auth, &mcpguard.Options{Audit: h.sink, Confirmer: testSigner(t, nil), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.g.Install(u.srv); err != nil {
		t.Fatal(err)
	}
	return h
}

// connectUI connects a go-sdk client bound to id on protocol v and returns
// both ends.
func connectUI(t *testing.T, h *harness, id *mcpguard.Identity, v string, copts *mcp.ClientOptions) (*mcp.ClientSession, *mcp.ServerSession) {
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
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "ui-client", Version: "1"}, copts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs, ss
}

// cursorFor forges a go-sdk cursor that names last.
func cursorFor(t *testing.T, last string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(struct{ LastUID string }{last}); err != nil {
		t.Fatal(err)
	}
	return base64.URLEncoding.EncodeToString(buf.Bytes())
}

func timeout() <-chan time.Time { return time.After(5 * time.Second) }

func resourceURIs(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	out := []string{}
	for r, err := range cs.Resources(context.Background(), nil) {
		if err != nil {
			t.Fatalf("listing the resources: %v", err)
		}
		out = append(out, r.URI)
	}
	return out
}

// TestReview15HiddenUIResourceNotListed: resources/list shows a UI
// resource only to a caller who may see a tool that names it, in one page
// whatever the server's page size (a filtered page's size, or a cursor
// naming its last resource, would tell of the hidden ones), and a cursor
// lists nothing, whatever resource it names.
func TestReview15HiddenUIResourceNotListed(t *testing.T) {
	for _, v := range protocolVersions {
		for _, pageSize := range []int{0, 1, 2} {
			t.Run(fmt.Sprintf("%s_page_size_%d", versionName(v), pageSize), func(t *testing.T) {
				h := newUIServer(pageSize, true, nil).guard(t)
				bobCS, _ := connectUI(t, h, bob, v, nil)
				aliceCS, _ := connectUI(t, h, alice, v, nil)
				want := []string{plainURI, uiLater, uiOpen}
				if diff := cmp.Diff(want, resourceURIs(t, bobCS)); diff != "" {
					t.Errorf("bob's resources (-want +got):\n%s", diff)
				}
				wantAll := []string{plainURI, uiAdmin, uiLegacy, uiLater, uiOpen}
				if diff := cmp.Diff(wantAll, resourceURIs(t, aliceCS)); diff != "" {
					t.Errorf("alice's resources (-want +got):\n%s", diff)
				}
				res, err := bobCS.ListResources(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				if res.NextCursor != "" || len(res.Resources) != len(want) {
					t.Errorf("bob's first page: %d resources, cursor %q; want all %d in one page", len(res.Resources), res.NextCursor, len(want))
				}
			})
		}
	}
	h := newUIServer(1, true, nil).guard(t)
	r := h.rawConnect(bob)
	full := r.response("resources/list", `{}`)
	if strings.Contains(full, "admin") || strings.Contains(full, "nextCursor") {
		t.Errorf("bob's resources/list %s names an admin resource or has a cursor", full)
	}
	strip := func(s string) string { return regexp.MustCompile(`"id":\d+,`).ReplaceAllString(s, "") } // each response has its own id
	want := ""
	for _, c := range []string{cursorFor(t, uiAdmin), cursorFor(t, "ui://admin/zzz"), cursorFor(t, plainURI), "not a cursor"} {
		q, _ := json.Marshal(c)
		got := r.response("resources/list", `{"cursor":`+string(q)+`}`)
		if want == "" {
			want = got
			if !strings.Contains(got, `"resources":[]`) {
				t.Errorf("a cursor listed %s, want no resources", got)
			}
		}
		if strip(got) != strip(want) {
			t.Errorf("cursor %q: %s, want %s", c, got, want)
		}
	}
}

// TestReview15HiddenUIResourceLooksUnknown: bob's resources/read,
// resources/subscribe and subscriptions/listen of the UI resource of a
// tool he may not see are answered byte for byte as by a server that does
// not have the tool nor the resource, whether a resource or a template
// serves it; its SubscribeHandler never hears of them. Alice, who may see
// the tools, reads and subscribes.
func TestReview15HiddenUIResourceLooksUnknown(t *testing.T) {
	u := newUIServer(0, true, nil)
	h := u.guard(t)
	guarded := h.rawConnect(bob)
	bare := rawConnectTo(t, newUIServer(0, false, nil).srv, nil)
	probes := []string{uiAdmin, uiLegacy, uiTpl, "ui://admin/nope", "ui://tpl/nope"}
	for _, uri := range probes {
		q, _ := json.Marshal(uri)
		for _, p := range []struct{ method, params string }{
			{"resources/read", `{"uri":` + string(q) + `}`},
			{"resources/subscribe", `{"uri":` + string(q) + `}`},
			{"subscriptions/listen", `{"notifications":{"resourceSubscriptions":[` + string(q) + `]}}`},
		} {
			got, want := guarded.response(p.method, p.params), bare.response(p.method, p.params)
			if got != want {
				t.Errorf("bob's %s %s:\n got %s\nwant %s", p.method, p.params, got, want)
			}
		}
	}
	for _, s := range u.subscribers() {
		if s == "bob "+uiAdmin || s == "bob "+uiLegacy || s == "bob "+uiTpl {
			t.Errorf("the SubscribeHandler heard %q", s)
		}
	}

	// A server without a SubscribeHandler refuses every subscription
	// alike: so does the guard.
	guarded = newUIServerSubs(0, true, false, nil).guard(t).rawConnect(bob)
	bare = rawConnectTo(t, newUIServerSubs(0, false, false, nil).srv, nil)
	for _, uri := range probes {
		q, _ := json.Marshal(uri)
		params := `{"uri":` + string(q) + `}`
		if got, want := guarded.response("resources/subscribe", params), bare.response("resources/subscribe", params); got != want {
			t.Errorf("bob's resources/subscribe %s without a SubscribeHandler:\n got %s\nwant %s", params, got, want)
		}
	}

	ctx := context.Background()
	aliceCS, _ := connectUI(t, h, alice, "2025-11-25", nil)
	bobCS, _ := connectUI(t, h, bob, "2025-11-25", nil)
	for _, uri := range []string{uiAdmin, uiLegacy, uiTpl, uiOpen, plainURI} {
		if _, err := aliceCS.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err != nil {
			t.Errorf("alice reading %s: %v", uri, err)
		}
		if err := aliceCS.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Errorf("alice subscribing to %s: %v", uri, err)
		}
	}
	for _, uri := range []string{uiOpen, plainURI} {
		if _, err := bobCS.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err != nil {
			t.Errorf("bob reading %s: %v", uri, err)
		}
	}
}

// updateWatch counts, per server session, the resources/updated and
// resources/list_changed notifications the guard passes on (a sending
// middleware inside it) and those the server tried to send (one outside).
type updateWatch struct {
	mu        sync.Mutex
	delivered map[string]int // "session method uri"
	attempted map[string]int
	acked     map[*mcp.ServerSession]int
	// ackedURI counts, by "session uri", the acknowledgements of listens
	// that subscribe to uri: a session's client opens other listens too
	// (for list changes), acknowledged at any time.
	ackedURI map[string]int
	changed  chan struct{}
}

func newUpdateWatch() *updateWatch {
	return &updateWatch{delivered: map[string]int{}, attempted: map[string]int{}, acked: map[*mcp.ServerSession]int{}, ackedURI: map[string]int{}, changed: make(chan struct{}, 256)}
}

func (w *updateWatch) middleware(counts map[string]int, signal bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			ss, _ := req.GetSession().(*mcp.ServerSession)
			key := ""
			switch p := req.GetParams().(type) {
			case *mcp.ResourceUpdatedNotificationParams:
				key = fmt.Sprintf("%p %s %s", ss, method, p.URI)
			case *mcp.ResourceListChangedParams:
				key = fmt.Sprintf("%p %s", ss, method)
			}
			w.mu.Lock()
			if key != "" {
				counts[key]++
			}
			if method == "notifications/subscriptions/acknowledged" && !signal {
				w.acked[ss]++
				if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok {
					for _, uri := range p.Notifications.ResourceSubscriptions {
						w.ackedURI[fmt.Sprintf("%p %s", ss, uri)]++
					}
				}
			}
			w.mu.Unlock()
			if signal {
				select {
				case w.changed <- struct{}{}:
				default:
				}
			}
			return res, err
		}
	}
}

func (w *updateWatch) count(counts map[string]int, key string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return counts[key]
}

// subscribe subscribes cs to uri: on the default protocol the go-sdk's
// Subscribe holds a subscriptions/listen open, so it waits for the server's
// acknowledgement of a listen for uri (the subscription is in place once it
// is sent), or the refusal. Under load the go-sdk's Subscribe was seen to
// return nil before the server had the listen: that is not taken for the
// acknowledgement.
func (w *updateWatch) subscribe(t *testing.T, cs *mcp.ClientSession, ss *mcp.ServerSession, v, uri string) error {
	t.Helper()
	if v != "" {
		return cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri})
	}
	key := fmt.Sprintf("%p %s", ss, uri)
	w.mu.Lock()
	n := w.ackedURI[key]
	w.mu.Unlock()
	errc := make(chan error, 1)
	go func() { errc <- cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}) }()
	var err error
	waitFor(t, func() bool {
		select {
		case err = <-errc:
			if err != nil {
				return true
			}
		default:
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.ackedURI[key] > n
	})
	return err
}

// TestReview15HiddenUIResourceUpdatesNotSent: notifications/resources/updated
// for a UI resource reaches a session only while its caller may see a tool
// that names it: not once a tool it may not see names it (the guard follows
// the server's tools), not once its roles shrink, and again once the tool
// that hid it is gone.
func TestReview15HiddenUIResourceUpdatesNotSent(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			w := newUpdateWatch()
			u := newUIServer(0, true, func(s *mcp.Server) { s.AddSendingMiddleware(w.middleware(w.delivered, false)) })
			h := u.guard(t)
			aliceCS, aliceSS := connectUI(t, h, alice, v, nil)
			bobCS, bobSS := connectUI(t, h, bob, v, nil)
			for _, uri := range []string{uiAdmin, uiLater} {
				if err := w.subscribe(t, aliceCS, aliceSS, v, uri); err != nil {
					t.Fatalf("alice subscribing to %s: %v", uri, err)
				}
			}
			for _, uri := range []string{uiLater, uiOpen} {
				if err := w.subscribe(t, bobCS, bobSS, v, uri); err != nil {
					t.Fatalf("bob subscribing to %s: %v", uri, err)
				}
			}
			ctx := context.Background()
			sent := map[string]int{}
			check := func(step string, ss *mcp.ServerSession, uri string, want int) {
				t.Helper()
				key := fmt.Sprintf("%p notifications/resources/updated %s", ss, uri)
				if got := w.count(w.delivered, key) - sent[key]; got != want {
					who := "alice"
					if ss == bobSS {
						who = "bob"
					}
					t.Errorf("%s: %s was sent %d resources/updated for %s, want %d", step, who, got, uri, want)
				}
				sent[key] = w.count(w.delivered, key)
			}
			update := func(uri string) {
				t.Helper()
				if err := h.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
					t.Fatal(err)
				}
			}

			update(uiLater)
			check("plain", bobSS, uiLater, 1)
			check("plain", aliceSS, uiLater, 1)

			h.srv.AddTool(uiTool("admin_later", nested(uiLater)), okTool)
			update(uiLater)
			check("named by an admin tool", bobSS, uiLater, 0)
			check("named by an admin tool", aliceSS, uiLater, 1)
			if got := resourceURIs(t, bobCS); strings.Contains(strings.Join(got, " "), uiLater) {
				t.Errorf("bob lists %v, with %s", got, uiLater)
			}
			if _, err := bobCS.ReadResource(ctx, &mcp.ReadResourceParams{URI: uiLater}); err == nil {
				t.Errorf("bob read %s once an admin tool names it", uiLater)
			}

			update(uiAdmin)
			check("admin", aliceSS, uiAdmin, 1)
			// alice goes on with bob's roles (a refreshed token), calling a
			// tool: the session's caller may no longer see admin_app.
			h.auth.mu.Lock()
			h.auth.ids[aliceSS] = &mcpguard.Identity{Principal: &policy.Principal{Subject: "alice", Roles: []string{"user"}}, Credential: mcpguard.NewCredential("alice-2")}
			h.auth.mu.Unlock()
			if res, err := call(t, aliceCS, "echo", map[string]any{"text": "hi"}); err != nil || res.IsError {
				t.Fatalf("alice's call: %v %s", err, mustJSON(res))
			}
			update(uiAdmin)
			check("roles shrank", aliceSS, uiAdmin, 0)

			h.srv.RemoveTools("admin_later")
			update(uiLater)
			check("admin tool removed", bobSS, uiLater, 1)
			update(uiOpen)
			check("open", bobSS, uiOpen, 1)
		})
	}
}

// TestReview15HiddenUIResourceListChange: notifications/resources/list_changed
// reaches a session only when a resource its caller may see was added,
// replaced or removed since it last listed them (or was last told): a UI
// resource of a tool it may not see coming and going tells it nothing.
func TestReview15HiddenUIResourceListChange(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			w := newUpdateWatch()
			u := newUIServer(0, true, func(s *mcp.Server) { s.AddSendingMiddleware(w.middleware(w.delivered, false)) })
			h := u.guard(t)
			h.srv.AddSendingMiddleware(w.middleware(w.attempted, true))
			copts := &mcp.ClientOptions{ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {}}
			aliceCS, aliceSS := connectUI(t, h, alice, v, copts)
			bobCS, bobSS := connectUI(t, h, bob, v, copts)
			resourceURIs(t, aliceCS)
			resourceURIs(t, bobCS)
			if v == "" {
				waitFor(t, func() bool {
					w.mu.Lock()
					defer w.mu.Unlock()
					return w.acked[aliceSS] > 0 && w.acked[bobSS] > 0
				})
			}
			key := func(ss *mcp.ServerSession) string {
				return fmt.Sprintf("%p notifications/resources/list_changed", ss)
			}
			// The admin tool comes first: its resource is hidden from the
			// moment it is added.
			h.srv.AddTool(uiTool("admin_extra", nested("ui://admin/extra")), okTool)
			steps := []struct {
				name    string
				change  func()
				bobSees bool
			}{
				{"add_hidden", func() { u.add("ui://admin/extra") }, false},
				{"add_plain", func() { u.add("file:///plain2.txt") }, true},
				{"remove_hidden", func() { h.srv.RemoveResources("ui://admin/extra") }, false},
				{"remove_plain", func() { h.srv.RemoveResources("file:///plain2.txt") }, true},
			}
			bobWant := 0
			for i, st := range steps {
				st.change()
				for _, ss := range []*mcp.ServerSession{aliceSS, bobSS} {
					for w.count(w.attempted, key(ss)) < i+1 {
						select {
						case <-w.changed:
						case <-timeout():
							t.Fatalf("%s: the server did not try to notify", st.name)
						}
					}
				}
				if st.bobSees {
					bobWant++
				}
				if got := w.count(w.delivered, key(aliceSS)); got != i+1 {
					t.Errorf("%s: alice was sent %d resources/list_changed, want %d", st.name, got, i+1)
				}
				if got := w.count(w.delivered, key(bobSS)); got != bobWant {
					t.Errorf("%s: bob was sent %d resources/list_changed, want %d", st.name, got, bobWant)
				}
			}
		})
	}
}
