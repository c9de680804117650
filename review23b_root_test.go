package mcpguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r23bMeta is the _meta of a request on protocol 2026-07-28, which has no
// initialize.
const r23bMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`

// modernConnect connects a raw in-memory client to srv on protocol
// 2026-07-28 (bind sees its server session first).
func modernConnect(t *testing.T, srv *mcp.Server, bind func(*mcp.ServerSession)) *rawSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bind != nil {
		bind(ss)
	}
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); ss.Close() })
	return &rawSession{t: t, conn: conn}
}

// listenFor opens a subscriptions/listen for notes and waits for its
// acknowledgement.
func (r *rawSession) listenFor(notes string) {
	r.t.Helper()
	r.start("subscriptions/listen", `{"notifications":`+notes+`,`+r23bMeta+`}`)
	for {
		m := r.read()
		if req, ok := m.(*jsonrpc.Request); ok && req.Method == "notifications/subscriptions/acknowledged" {
			return
		}
		if resp, ok := m.(*jsonrpc.Response); ok {
			r.t.Fatalf("subscriptions/listen %s answered %+v, want it acknowledged", notes, resp)
		}
	}
}

// heardWithin reports whether the server sent method within d.
func (r *rawSession) heardWithin(method string, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		m, err := r.conn.Read(ctx)
		if err != nil {
			return false
		}
		if req, ok := m.(*jsonrpc.Request); ok && req.Method == method {
			return true
		}
	}
}

// TestReview23bListenRefusedAtFirstStopsListChanged: the go-sdk ends a
// session's list-changed subscriptions whenever one of its listens ends,
// refused or not, so a listen naming a URI the server does not have ends
// another listen's tools/list_changed subscription on the same session. A
// listen whose first URI is a hidden UI resource was refused by the guard
// without the go-sdk hearing of it, so the other listen went on hearing of
// tool changes: the caller could tell the hidden URI from an absent one.
func TestReview23bListenRefusedAtFirstStopsListChanged(t *testing.T) {
	u := newUIServer(0, true, nil)
	h := u.guard(t)
	b := newUIServer(0, false, nil)
	asBob := func(ss *mcp.ServerSession) {
		h.auth.mu.Lock()
		h.auth.ids[ss] = bob
		h.auth.mu.Unlock()
	}
	run := func(srv *mcp.Server, bind func(*mcp.ServerSession), uri string) (string, bool) {
		t.Helper()
		a := modernConnect(t, srv, bind)
		a.listenFor(`{"toolsListChanged":true}`)
		q, _ := json.Marshal([]string{uri})
		answer := a.response("subscriptions/listen", `{"notifications":{"resourceSubscriptions":`+string(q)+`},`+r23bMeta+`}`)
		// A second session, listening all along, tells when the change
		// has been sent.
		c := modernConnect(t, srv, bind)
		c.listenFor(`{"toolsListChanged":true}`)
		srv.AddTool(uiTool("open_app", mcp.Meta{"ui": map[string]any{"resourceUri": uiOpen}, "v": uri}), okTool)
		if !c.heardWithin("notifications/tools/list_changed", 5*time.Second) {
			t.Fatalf("%s: the listening session heard of no tool change", uri)
		}
		return answer, a.heardWithin("notifications/tools/list_changed", 300*time.Millisecond)
	}
	wantAnswer, want := run(b.srv, nil, uiAdmin)
	if want {
		t.Fatal("on the bare server the first listen went on after the second was refused")
	}
	for _, uri := range []string{uiAdmin, "ui://admin/nope"} {
		answer, got := run(u.srv, asBob, uri)
		if got != want {
			t.Errorf("%s: bob's first listen heard a tool change after the refused one: %v, want %v (as on a server without the tool)", uri, got, want)
		}
		if uri == uiAdmin && answer != wantAnswer {
			t.Errorf("%s: the refused listen answered\n got %s\nwant %s", uri, answer, wantAnswer)
		}
	}
}

type pokeParams struct {
	mcp.ParamsBase
}

type pokeResult struct {
	mcp.ResultBase
	Subject string `json:"subject"`
}

// TestReview23bCustomNotificationsMethodIsAuthenticated: the go-sdk takes
// a custom method under any name that is not a standard one, such as
// "notifications/acme/poke" (a request: a custom method is never a
// notification). It runs as its authenticated caller, as every custom
// method does: the guard passed it on unauthenticated, as one of the
// go-sdk's own notifications, by its prefix. Its refusal is a JSON-RPC error
// answering its request, with a correlation id.
func TestReview23bCustomNotificationsMethodIsAuthenticated(t *testing.T) {
	var heard []string
	h := newServerHarness(t, basePolicy(false), nil, func(s *mcp.Server) {
		err := mcp.AddReceivingCustomMethod(s, "notifications/acme/poke", func(ctx context.Context, _ *mcp.ServerSession, _ *pokeParams) (*pokeResult, error) {
			sub := "<nobody>"
			if id := mcpguard.FromContext(ctx); id != nil && id.Principal != nil {
				sub = id.Principal.Subject
			}
			heard = append(heard, sub)
			return &pokeResult{Subject: sub}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	res, werr := h.rawConnect(bob).call("notifications/acme/poke", `{}`)
	if werr != nil {
		t.Fatalf("bob's notifications/acme/poke: %v", werr)
	}
	var out pokeResult
	if err := json.Unmarshal(res, &out); err != nil || out.Subject != "bob" {
		t.Errorf("bob's notifications/acme/poke answered %s (%v), want subject bob", res, err)
	}
	anon := h.rawConnect(nil)
	got := anon.response("notifications/acme/poke", `{}`)
	if !strings.Contains(got, `"id":`) || !strings.Contains(got, `"error":`) ||
		!strings.Contains(got, string(mcpguard.CodeUnauthenticated)) || !strings.Contains(got, `correlation_id`) {
		t.Errorf("an unauthenticated notifications/acme/poke answered %s, want an UNAUTHENTICATED JSON-RPC error with a correlation id", got)
	}
	if len(heard) != 1 || heard[0] != "bob" {
		t.Errorf("the handler heard %q, want only bob", heard)
	}
}

// TestReview23bListenRefusedKeepsResourcesView: a subscriptions/listen for
// resources/list_changed that names a URI the server does not have gives
// its session a view of the resources before the go-sdk refuses it, so
// that session (on the legacy protocol, sent every change) is told of a
// change it may see. One naming a hidden UI resource was refused before
// the view was given: that session was not told, and the caller could
// tell the hidden URI from an absent one.
func TestReview23bListenRefusedKeepsResourcesView(t *testing.T) {
	u := newUIServer(0, true, nil)
	h := u.guard(t)
	heard := map[string]bool{}
	for i, uri := range []string{uiAdmin, "ui://admin/nope"} {
		a := h.rawConnect(bob)
		q, _ := json.Marshal([]string{uri})
		a.response("subscriptions/listen", `{"notifications":{"resourcesListChanged":true,"resourceSubscriptions":`+string(q)+`}}`)
		// A second session, that listed the resources, tells when the
		// change has been sent.
		c := h.rawConnect(bob)
		if _, werr := c.call("resources/list", `{}`); werr != nil {
			t.Fatal(werr)
		}
		u.add("file:///new" + string(rune('a'+i)) + ".txt")
		if !c.heardWithin("notifications/resources/list_changed", 5*time.Second) {
			t.Fatalf("%s: the session that listed the resources heard of no change", uri)
		}
		heard[uri] = a.heardWithin("notifications/resources/list_changed", 300*time.Millisecond)
	}
	if heard[uiAdmin] != heard["ui://admin/nope"] {
		t.Errorf("after a refused listen, bob's session was told of a change: %v; want the same for a hidden URI as for an absent one", heard)
	}
}

// TestReview23bHousekeepingUnauthenticated: the go-sdk's own methods that a
// session makes whoever its caller pass the guard as they come: initialize,
// ping and logging/setLevel are answered to a client the guard cannot
// authenticate as the bare server answers them, and its notifications
// reach the server's handlers.
func TestReview23bHousekeepingUnauthenticated(t *testing.T) {
	type heard struct {
		initialized, roots, progress atomic.Int64
	}
	opts := func(h *heard) *mcp.ServerOptions {
		return &mcp.ServerOptions{
			InitializedHandler: func(context.Context, *mcp.InitializedRequest) { h.initialized.Add(1) },
			//lint:ignore SA1019 a notification the guard passes on, deprecated or not
			RootsListChangedHandler:     func(context.Context, *mcp.RootsListChangedRequest) { h.roots.Add(1) },
			ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationServerRequest) { h.progress.Add(1) },
		}
	}
	var gh, bh heard
	h := newServerHarness(t, basePolicy(false), opts(&gh), nil)
	bareSrv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, opts(&bh))
	addTools(bareSrv, &spy{})
	g, b := h.rawConnect(nil), rawConnectTo(t, bareSrv, nil)
	for _, r := range []*rawSession{g, b} {
		r.send(&jsonrpc.Request{Method: "notifications/roots/list_changed", Params: json.RawMessage(`{}`)})
		r.send(&jsonrpc.Request{Method: "notifications/progress", Params: json.RawMessage(`{"progressToken":"t","progress":1}`)})
	}
	for _, m := range []struct{ method, params string }{
		{"ping", `{}`},
		{"logging/setLevel", `{"level":"debug"}`},
	} {
		if got, want := g.response(m.method, m.params), b.response(m.method, m.params); got != want {
			t.Errorf("an unauthenticated %s answered\n got %s\nwant %s", m.method, got, want)
		}
	}
	for _, x := range []*heard{&gh, &bh} {
		waitFor(t, func() bool {
			return x.initialized.Load() == 1 && x.roots.Load() == 1 && x.progress.Load() == 1
		})
	}
}
