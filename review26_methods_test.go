package mcpguard_test

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review26Server is a server with every feature the go-sdk serves: tools,
// prompts, resources, a template, completions and subscriptions; withAdmin
// adds the admin tools and their UI resources. Every handler refuses a
// resource the server does not have with mcp.ResourceNotFoundError, as the
// go-sdk advises a resource's handler to (and the guard's documentation a
// SubscribeHandler). unsub, if set, hears each URI unsubscribed from.
func review26Server(withAdmin bool, unsub func(context.Context, *mcp.UnsubscribeRequest)) *mcp.Server {
	have := map[string]bool{}
	sopts := &mcp.ServerOptions{
		SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
			if !have[req.Params.URI] {
				return mcp.ResourceNotFoundError(req.Params.URI)
			}
			return nil
		},
		UnsubscribeHandler: func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
			if unsub != nil {
				unsub(ctx, req)
			}
			if !have[req.Params.URI] {
				return mcp.ResourceNotFoundError(req.Params.URI)
			}
			return nil
		},
		CompletionHandler: func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			ref := req.Params.Ref
			if ref.Type == "ref/resource" && !have[ref.URI] {
				return nil, mcp.ResourceNotFoundError(ref.URI)
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"v"}}}, nil
		},
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, sopts)
	addTools(s, &spy{})
	add := func(uri string) {
		have[uri] = true
		s.AddResource(&mcp.Resource{URI: uri, Name: uri},
			func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
			})
	}
	s.AddTool(uiTool("open_app", nested(uiOpen)), okTool)
	add(uiOpen)
	add(plainURI)
	s.AddPrompt(&mcp.Prompt{Name: "p"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
	})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "ui://tpl/{name}", Name: "tpl"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			if !have[req.Params.URI] {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "tpl"}}}, nil
		})
	if withAdmin {
		s.AddTool(uiTool("admin_app", nested(uiAdmin)), okTool)
		s.AddTool(uiTool("admin_tpl", nested(uiTpl)), okTool)
		add(uiAdmin)
		have[uiTpl] = true
	}
	return s
}

// review26Guard installs a guard of uiPolicy on s.
func review26Guard(t *testing.T, s *mcp.Server) *harness {
	t.Helper()
	h := &harness{t: t, srv: s, auth: &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}, sink: &memSink{}, down: &spy{}}
	pol, err := policy.New(uiPolicy())
	if err != nil {
		t.Fatal(err)
	}
	h.g, err = mcpguard.New(pol, h.auth, &mcpguard.Options{Audit: h.sink, Confirmer: testSigner(t, nil), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.g.Install(s); err != nil {
		t.Fatal(err)
	}
	return h
}

// review26Corr matches a refusal's correlation id, which each has its own.
var review26Corr = regexp.MustCompile(`(correlation_id\\?":\\?")[^"\\]*`)

// review26Connect connects a raw client bound to id to h's server, on
// protocol 2026-07-28 (each request marked so) or, with legacy, 2025-11-25.
func review26Connect(t *testing.T, h *harness, id *mcpguard.Identity, legacy bool) *review21Raw {
	t.Helper()
	bind := func(ss *mcp.ServerSession) {
		h.auth.mu.Lock()
		h.auth.ids[ss] = id
		h.auth.mu.Unlock()
	}
	if legacy {
		return &review21Raw{rawConnectTo(t, h.srv, bind), ""}
	}
	return &review21Raw{rawConnectNew(t, h.srv, bind), "2026-07-28"}
}

// review26Same fails t for each probe that the guarded server with the
// admin tools answers bob otherwise, byte for byte, than the guarded server
// without them (correlation ids aside).
func review26Same(t *testing.T, legacy bool, probes [][2]string) {
	t.Helper()
	review26SameOn(t, func(withAdmin bool) *mcp.Server { return review26Server(withAdmin, nil) }, legacy, probes)
}

// review26SameOn is review26Same for the servers build makes, with and
// without the admin tools; it returns the answers of the server without
// them, correlation ids masked, in the order of probes.
func review26SameOn(t *testing.T, build func(withAdmin bool) *mcp.Server, legacy bool, probes [][2]string) []string {
	t.Helper()
	g := review26Connect(t, review26Guard(t, build(true)), bob, legacy)
	w := review26Connect(t, review26Guard(t, build(false)), bob, legacy)
	var wants []string
	for _, p := range probes {
		got := review26Corr.ReplaceAllString(g.response(p[0], p[1]), "${1}X")
		want := review26Corr.ReplaceAllString(w.response(p[0], p[1]), "${1}X")
		if got != want {
			t.Errorf("bob's %s %s:\n got %s\nwant %s", p[0], p[1], got, want)
		}
		wants = append(wants, want)
	}
	return wants
}

func review26Q(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestReview26EveryMethodHiddenLooksAbsent: through every method the
// go-sdk serves, on both protocols, a server with tools bob may not see
// (and their UI resources) answers him byte for byte as one without them:
// tools/call by the hidden names, their case and Unicode-fold variants, with
// any arguments, duplicate "name" members, a progress token or a multi
// round-trip's state; the UI resources' read and subscription; the
// listings; ping and logging/setLevel.
func TestReview26EveryMethodHiddenLooksAbsent(t *testing.T) {
	var probes [][2]string
	for _, name := range []string{"admin_app", "ADMIN_APP", "Admin_App", "admin_tpl", "admin_ſtats", "admin_nope"} {
		probes = append(probes,
			[2]string{"tools/call", `{"name":` + review26Q(name) + `,"arguments":{}}`},
			[2]string{"tools/call", `{"name":` + review26Q(name) + `,"arguments":{"X":1},"_meta":{"progressToken":"t"}}`},
		)
	}
	for _, name := range []string{"admin_app", "admin_nope"} {
		for _, args := range []string{`[]`, `null`, `1`, `"x"`, `{"a":1,"a":2}`} {
			probes = append(probes, [2]string{"tools/call", `{"name":` + review26Q(name) + `,"arguments":` + args + `}`})
		}
		probes = append(probes,
			[2]string{"tools/call", `{"name":"echo","name":` + review26Q(name) + `,"arguments":{}}`},
			[2]string{"tools/call", `{"Name":` + review26Q(name) + `,"arguments":{}}`},
			[2]string{"tools/call", `{"name":` + review26Q(name) + `,"arguments":{},"_meta":{"requestState":"x","inputResponses":{}}}`},
		)
	}
	for _, uri := range []string{uiAdmin, uiTpl, "UI://ADMIN/APP", "ui://tpl/%61dmin", "ui://admin/nope", "ui://tpl/nope"} {
		probes = append(probes,
			[2]string{"resources/read", `{"uri":` + review26Q(uri) + `}`},
			[2]string{"resources/subscribe", `{"uri":` + review26Q(uri) + `}`},
			[2]string{"subscriptions/listen", `{"notifications":{"resourceSubscriptions":[` + review26Q(uri) + `]}}`},
		)
	}
	probes = append(probes,
		[2]string{"tools/list", `{"cursor":""}`},
		[2]string{"resources/list", `{"cursor":""}`},
		[2]string{"resources/templates/list", `{"cursor":""}`},
		[2]string{"prompts/list", `{"cursor":""}`},
		[2]string{"prompts/get", `{"name":"p"}`},
		[2]string{"ping", `{"x":0}`},
		[2]string{"logging/setLevel", `{"level":"debug"}`},
	)
	for _, legacy := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "2025-11-25"}[legacy], func(t *testing.T) {
			review26Same(t, legacy, probes)
		})
	}
}

// TestReview26HiddenUIResourceCompletion: completion/complete whose
// ref/resource is, or means, the UI resource of a tool bob may not see is
// answered as for a resource the server does not have. Before, the guard
// passed it to the CompletionHandler, which completes a URI it has (and
// refuses one it lacks with mcp.ResourceNotFoundError): bob's completion of
// "ui://admin/app" returned values where an absent URI is refused, telling
// him that admin_app's UI resource, and so the tool, exists. A request the
// go-sdk refuses first (no argument name) and a server without a
// CompletionHandler are answered as the go-sdk does. Alice completes.
func TestReview26HiddenUIResourceCompletion(t *testing.T) {
	var probes [][2]string
	for _, uri := range []string{uiAdmin, uiTpl, "UI://ADMIN/APP", "ui://tpl/%61dmin", "ui://admin/nope", "ui://tpl/nope", uiOpen} {
		probes = append(probes,
			[2]string{"completion/complete", `{"ref":{"type":"ref/resource","uri":` + review26Q(uri) + `},"argument":{"name":"name","value":""}}`},
			[2]string{"completion/complete", `{"ref":{"type":"ref/resource","uri":` + review26Q(uri) + `},"argument":{"name":"","value":""}}`},
		)
	}
	for _, legacy := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "2025-11-25"}[legacy], func(t *testing.T) {
			review26Same(t, legacy, probes)
		})
	}

	// Without a CompletionHandler every completion is refused alike.
	bare := func(withAdmin bool) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		s.AddTool(uiTool("open_app", nested(uiOpen)), okTool)
		if withAdmin {
			s.AddTool(uiTool("admin_app", nested(uiAdmin)), okTool)
		}
		return s
	}
	for _, legacy := range []bool{false, true} {
		g := review26Connect(t, review26Guard(t, bare(true)), bob, legacy)
		w := review26Connect(t, review26Guard(t, bare(false)), bob, legacy)
		params := `{"ref":{"type":"ref/resource","uri":` + review26Q(uiAdmin) + `},"argument":{"name":"name","value":""}}`
		if got, want := g.response("completion/complete", params), w.response("completion/complete", params); got != want {
			t.Errorf("legacy %v, no CompletionHandler: bob's completion/complete:\n got %s\nwant %s", legacy, got, want)
		}
	}

	a := review26Connect(t, review26Guard(t, review26Server(true, nil)), alice, true)
	if res, werr := a.call("completion/complete", `{"ref":{"type":"ref/resource","uri":`+review26Q(uiAdmin)+`},"argument":{"name":"name","value":""}}`); werr != nil || !strings.Contains(string(res), `"values":["v"]`) {
		t.Errorf("alice's completion of %s: %s, %v; want its values", uiAdmin, res, werr)
	}
}

// TestReview26HiddenUIResourceUnsubscribe: resources/unsubscribe from the
// UI resource of a tool bob may not see is answered as resources/subscribe
// to it is, as for a resource the server does not have. Before, the guard
// passed it to the UnsubscribeHandler, whose answer for a URI the server
// has (success) told the resource apart from an absent one (refused with
// mcp.ResourceNotFoundError). It still reaches the go-sdk, so that a
// subscription made while bob could see the resource ends.
func TestReview26HiddenUIResourceUnsubscribe(t *testing.T) {
	var probes [][2]string
	for _, uri := range []string{uiAdmin, uiTpl, "UI://ADMIN/APP", "ui://admin/nope", uiOpen} {
		probes = append(probes, [2]string{"resources/unsubscribe", `{"uri":` + review26Q(uri) + `}`})
	}
	review26Same(t, true, probes)

	// Alice subscribes, loses the admin role, and unsubscribes: she is
	// answered as for an absent resource, and the subscription ends.
	var mu sync.Mutex
	var heard []string
	h := review26Guard(t, review26Server(true, func(_ context.Context, req *mcp.UnsubscribeRequest) {
		mu.Lock()
		heard = append(heard, req.Params.URI)
		mu.Unlock()
	}))
	review26DemotedUnsubscribe(t, h)
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(heard, uiAdmin) {
		t.Errorf("the UnsubscribeHandler heard %q; want %s (the subscription is to end)", heard, uiAdmin)
	}
}

// review26DemotedUnsubscribe has alice, on a session of h, subscribe to
// uiAdmin, lose the admin role, and unsubscribe: she is answered as for an
// absent resource. It returns her session.
func review26DemotedUnsubscribe(t *testing.T, h *harness) *review21Raw {
	t.Helper()
	r := review26Connect(t, h, alice, true)
	if _, werr := r.call("resources/subscribe", `{"uri":`+review26Q(uiAdmin)+`}`); werr != nil {
		t.Fatalf("alice subscribing: %v", werr)
	}
	h.auth.mu.Lock()
	for ss, id := range h.auth.ids {
		if id == alice {
			h.auth.ids[ss] = &mcpguard.Identity{Principal: &policy.Principal{Subject: "alice", Roles: []string{"user"}}}
		}
	}
	h.auth.mu.Unlock()
	if _, werr := r.call("resources/unsubscribe", `{"uri":`+review26Q(uiAdmin)+`}`); werr == nil || werr.Message != "Resource not found" {
		t.Errorf("alice, no longer admin, unsubscribing: %v; want the not-found error", werr)
	}
	return r
}
