package mcpguard_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// newServerHarness is newHarness on a server made with sopts; before, if
// set, runs on the server before Install (to add middleware below the
// guard).
func newServerHarness(t *testing.T, cfg policy.Config, sopts *mcp.ServerOptions, before func(*mcp.Server)) *harness {
	t.Helper()
	h := &harness{t: t, auth: &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}, sink: &memSink{}, down: &spy{}}
	h.srv = mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, sopts)
	addTools(h.srv, h.down)
	if before != nil {
		before(h.srv)
	}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.g, err = mcpguard.New(pol, h.auth, &mcpguard.Options{Audit: h.sink, Confirmer: testSigner(t, nil), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.g.Install(h.srv); err != nil {
		t.Fatal(err)
	}
	return h
}

// rawSession speaks JSON-RPC to the server directly, as a client that is
// not the go-sdk's would: it sees every byte of every answer.
type rawSession struct {
	t       *testing.T
	conn    mcp.Connection
	next    int64
	skipped []string // methods of the messages response and call passed over
}

// rawConnect connects a raw client bound to id and initializes it on
// protocol 2025-11-25.
func (h *harness) rawConnect(id *mcpguard.Identity) *rawSession {
	h.t.Helper()
	return rawConnectTo(h.t, h.srv, func(ss *mcp.ServerSession) {
		h.auth.mu.Lock()
		h.auth.ids[ss] = id
		h.auth.mu.Unlock()
	})
}

// rawConnectTo connects a raw client to srv (bind sees its server
// session first) and initializes it on protocol 2025-11-25.
func rawConnectTo(t *testing.T, srv *mcp.Server, bind func(*mcp.ServerSession)) *rawSession {
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
	r := &rawSession{t: t, conn: conn}
	if _, werr := r.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`); werr != nil {
		t.Fatalf("initialize: %v", werr)
	}
	r.send(&jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)})
	return r
}

func (r *rawSession) send(msg jsonrpc.Message) {
	r.t.Helper()
	if err := r.conn.Write(context.Background(), msg); err != nil {
		r.t.Fatal(err)
	}
}

// read returns the next message, failing the test after five seconds.
func (r *rawSession) read() jsonrpc.Message {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	msg, err := r.conn.Read(ctx)
	if err != nil {
		r.t.Fatalf("reading from the server: %v", err)
	}
	return msg
}

// start sends a request and returns its id.
func (r *rawSession) start(method, params string) jsonrpc.ID {
	r.t.Helper()
	r.next++
	id, _ := jsonrpc.MakeID(float64(r.next))
	r.send(&jsonrpc.Request{ID: id, Method: method, Params: json.RawMessage(params)})
	return id
}

// response sends a request and returns its response as sent on the wire,
// skipping notifications.
func (r *rawSession) response(method, params string) string {
	r.t.Helper()
	id := r.start(method, params)
	for {
		m := r.read()
		if resp, ok := m.(*jsonrpc.Response); ok && resp.ID == id {
			b, err := jsonrpc.EncodeMessage(resp)
			if err != nil {
				r.t.Fatal(err)
			}
			return string(b)
		}
		if req, ok := m.(*jsonrpc.Request); ok {
			r.skipped = append(r.skipped, req.Method)
		}
	}
}

// call sends a request and returns its response's result bytes, or its
// error, skipping notifications.
func (r *rawSession) call(method, params string) (json.RawMessage, *jsonrpc.Error) {
	r.t.Helper()
	id := r.start(method, params)
	for {
		if resp, ok := r.read().(*jsonrpc.Response); ok && resp.ID == id {
			if resp.Error != nil {
				we := wireError(resp.Error)
				if we == nil {
					r.t.Fatalf("%s: error %v is not a JSON-RPC error", method, resp.Error)
				}
				return nil, we
			}
			return resp.Result, nil
		}
	}
}

// TestReview14ListenIsAuthenticated: subscriptions/listen subscribes a
// session to resource updates (the go-sdk calls the SubscribeHandler for
// each URI) and to list-changed notifications. Install promises that the
// server's subscriptions are served to authenticated callers only, as
// their own: listen is refused to a caller the guard cannot authenticate,
// and the SubscribeHandler finds the caller's Identity in its context.
func TestReview14ListenIsAuthenticated(t *testing.T) {
	var mu sync.Mutex
	var subscribers []string
	sopts := &mcp.ServerOptions{
		SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
			who := "<nobody>"
			if p := mcpguard.PrincipalFromContext(ctx); p != nil {
				who = p.Subject
			}
			mu.Lock()
			subscribers = append(subscribers, who)
			mu.Unlock()
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	}
	h := newServerHarness(t, basePolicy(false), sopts, nil)
	h.srv.AddResource(&mcp.Resource{URI: "file:///secret.txt", Name: "secret"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "s3cr3t"}}}, nil
		})
	const listen = `{"notifications":{"resourceSubscriptions":["file:///secret.txt"]}}`

	anon := h.rawConnect(nil)
	anon.start("subscriptions/listen", listen)
	switch m := anon.read().(type) {
	case *jsonrpc.Response:
		if we := wireError(m.Error); we == nil || !strings.Contains(string(we.Data), `"UNAUTHENTICATED"`) {
			t.Errorf("unauthenticated subscriptions/listen answered %+v, want an UNAUTHENTICATED error", m)
		}
	case *jsonrpc.Request:
		t.Errorf("unauthenticated subscriptions/listen was served: the server sent %s", m.Method)
	}

	b := h.rawConnect(bob)
	b.start("subscriptions/listen", listen)
	if m, ok := b.read().(*jsonrpc.Request); !ok || m.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("bob's subscriptions/listen: got %+v, want the acknowledgement", m)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(subscribers, ","); got != "bob" {
		t.Errorf("the SubscribeHandler ran for %q, want only bob's listen, as bob", got)
	}
}

// noteWatch records, per server session, the tools/list_changed
// notifications the server tried to send (seen by a sending middleware
// outside the guard) and those that went on to the wire (seen by one
// inside it).
type noteWatch struct {
	mu        sync.Mutex
	attempted map[*mcp.ServerSession]int
	delivered map[*mcp.ServerSession]int
	acked     map[*mcp.ServerSession]bool // subscriptions/listen acknowledged
	changed   chan struct{}
}

func newNoteWatch() *noteWatch {
	return &noteWatch{attempted: map[*mcp.ServerSession]int{}, delivered: map[*mcp.ServerSession]int{}, acked: map[*mcp.ServerSession]bool{}, changed: make(chan struct{}, 64)}
}

func (w *noteWatch) middleware(counts map[*mcp.ServerSession]int, signal bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "notifications/subscriptions/acknowledged" {
				ss, _ := req.GetSession().(*mcp.ServerSession)
				w.mu.Lock()
				w.acked[ss] = true
				w.mu.Unlock()
			}
			if method == "notifications/tools/list_changed" {
				ss, _ := req.GetSession().(*mcp.ServerSession)
				w.mu.Lock()
				counts[ss]++
				w.mu.Unlock()
				if signal {
					w.changed <- struct{}{}
				}
			}
			return res, err
		}
	}
}

// waitAttempts waits until the server has tried to notify n sessions in
// all.
func (w *noteWatch) waitAttempts(t *testing.T, n int) {
	t.Helper()
	for {
		w.mu.Lock()
		total := 0
		for _, c := range w.attempted {
			total += c
		}
		w.mu.Unlock()
		if total >= n {
			return
		}
		select {
		case <-w.changed:
		case <-time.After(5 * time.Second):
			t.Fatalf("the server tried %d tools/list_changed notifications, want %d", total, n)
		}
	}
}

func (w *noteWatch) listening(ss *mcp.ServerSession) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked[ss]
}

func (w *noteWatch) count(ss *mcp.ServerSession) (attempted, delivered int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.attempted[ss], w.delivered[ss]
}

// TestReview14HiddenToolChangeNotNotified: adding, replacing or removing a
// tool a session may not see must not tell that session anything: a
// tools/list_changed notification for it would tell a hidden tool's change
// from nothing happening. A change the session can see still reaches it.
func TestReview14HiddenToolChangeNotNotified(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil }
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			cfg := basePolicy(false)
			cfg.Tools = append(cfg.Tools, policy.ToolRule{Name: "admin_export", Class: policy.Read}, policy.ToolRule{Name: "lookup", Class: policy.Read})
			w := newNoteWatch()
			h := newServerHarness(t, cfg, nil, func(s *mcp.Server) { s.AddSendingMiddleware(w.middleware(w.delivered, false)) })
			h.srv.AddSendingMiddleware(w.middleware(w.attempted, true))

			// Each session lists its tools, as a client does before it
			// needs to hear that they changed.
			type watcher struct {
				ss    *mcp.ServerSession
				heard atomic.Int64
			}
			connect := func(id *mcpguard.Identity, lp *mcp.ListToolsParams) *watcher {
				wt := &watcher{}
				ctx := context.Background()
				ct, st := mcp.NewInMemoryTransports()
				ss, err := h.srv.Connect(ctx, st, nil)
				if err != nil {
					t.Fatal(err)
				}
				wt.ss = ss
				h.auth.mu.Lock()
				h.auth.ids[ss] = id
				h.auth.mu.Unlock()
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "watch", Version: "1"}, &mcp.ClientOptions{
					ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { wt.heard.Add(1) },
				}).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: v})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cs.Close(); ss.Close() })
				if _, err := cs.ListTools(ctx, lp); err != nil {
					t.Fatal(err)
				}
				return wt
			}
			admin, user := connect(alice, nil), connect(bob, nil)
			if v == "" {
				// On the default protocol a session hears changes through
				// subscriptions/listen, which its client opened at Connect.
				waitFor(t, func() bool { return w.listening(admin.ss) && w.listening(user.ss) })
			}
			// A session with no identity can neither list nor listen: it
			// hears of no change.
			anon := connectNoList(t, h, v)
			// Nor does bob's session that listed only with a cursor (an
			// empty page).
			paged := connect(bob, &mcp.ListToolsParams{Cursor: "not a cursor"})

			steps := []struct {
				name     string
				change   func()
				userSees bool
			}{
				{"add_hidden", func() { h.srv.AddTool(&mcp.Tool{Name: "admin_export", InputSchema: obj}, ok) }, false},
				{"replace_hidden", func() {
					h.srv.AddTool(&mcp.Tool{Name: "admin_export", Description: "v2", InputSchema: obj}, ok)
				}, false},
				{"remove_hidden", func() { h.srv.RemoveTools("admin_export") }, false},
				{"add_visible", func() { h.srv.AddTool(&mcp.Tool{Name: "lookup", InputSchema: obj}, ok) }, true},
			}
			want := func(sees bool) int {
				if sees {
					return 1
				}
				return 0
			}
			attempts, sessions := 0, 2
			if v == "" {
				waitFor(t, func() bool { return w.listening(paged.ss) })
				sessions = 3 // paged listens too; anon's listen was refused
			} else {
				sessions = 4 // a legacy session is sent every change, unasked
			}
			for _, st := range steps {
				st.change()
				attempts += sessions
				w.waitAttempts(t, attempts)
				if _, d := w.count(anon); d != 0 {
					t.Fatalf("%s: a session without an identity was sent %d notifications", st.name, d)
				}
				if _, d := w.count(paged.ss); d != want(st.userSees) {
					t.Fatalf("%s: bob's session that listed with a cursor was sent %d notifications, want %d", st.name, d, want(st.userSees))
				}
				_, got := w.count(user.ss)
				want := 0
				if st.userSees {
					want = 1
				}
				if _, d := w.count(admin.ss); d != attempts/sessions {
					t.Errorf("%s: the admin's session was sent %d notifications, want %d", st.name, d, attempts/sessions)
				}
				if got != want {
					t.Fatalf("%s: bob's session (who may not see admin_export) was sent %d tools/list_changed notifications, want %d", st.name, got, want)
				}
			}
			waitFor(t, func() bool { return user.heard.Load() == 1 })
		})
	}
}

// connectNoList connects a go-sdk client without an identity to h's
// server on protocol v and returns its server session.
func connectNoList(t *testing.T, h *harness, v string) *mcp.ServerSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := h.srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "anon", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
	}).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return ss
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReview14HiddenCallBytesMatchUnknown probes tools/call as bob, who
// may not see admin_stats, with names a prober would try and request
// shapes beyond the plain one: each answer is byte for byte the go-sdk's
// own for a server without the tool (and, with a NotFoundCode, the
// guard's answer for a name no server has), no call is charged against
// the limits, and every audit record is the same but for the name.
func TestReview14HiddenCallBytesMatchUnknown(t *testing.T) {
	names := []string{"admin_stats", "no_such_tool", "Admin_Stats", "admin_stats ", " admin_stats", "admin_\u017ftats", "admin_stats\u200b", "admin_stats\x00", ""}
	shapes := []string{
		`{"name":%s,"arguments":{}}`,
		`{"name":%s}`,
		`{"name":%s,"arguments":"not an object"}`,
		`{"name":%s,"arguments":{"n":1},"_meta":{"progressToken":"p1","io.mcpguard/dryRun":true}}`,
		`{"name":%s,"arguments":{},"requestState":"forged","inputResponses":{"confirm":{"action":"accept"}}}`,
	}
	for _, tc := range []struct {
		name string
		opts mcpguard.Options
	}{
		{"tool_errors", mcpguard.Options{}},
		{"protocol_errors", mcpguard.Options{ProtocolErrors: true}},
		{"not_found_code", mcpguard.Options{NotFoundCode: -32004}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 2, Window: time.Hour}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			opts := tc.opts
			opts.Limiter = lim
			h := newHarness(t, basePolicy(false), &opts)
			guarded := h.rawConnect(bob)
			bare := rawConnectTo(t, mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil), nil)
			for _, name := range names {
				q, _ := json.Marshal(name)
				for _, shape := range shapes {
					params := fmt.Sprintf(shape, q)
					got := guarded.response("tools/call", params)
					want := bare.response("tools/call", params)
					if tc.opts.NotFoundCode != 0 {
						want = strings.Replace(want, `"code":-32602`, fmt.Sprintf(`"code":%d`, tc.opts.NotFoundCode), 1)
					}
					if got != want {
						t.Errorf("tools/call %s:\n got %s\nwant %s", params, got, want)
					}
				}
			}
			if len(guarded.skipped) > 0 {
				t.Errorf("the probes were sent %v (progress, logging?); an unknown tool sends nothing", guarded.skipped)
			}
			// Nothing was charged: bob's two calls an hour are whole.
			cs := h.connect(bob, clientOpts{})
			for i := range 2 {
				if res, err := call(t, cs, "echo", map[string]any{"text": "hi"}); err != nil || res.IsError {
					t.Fatalf("visible call %d after the probes: %v %s", i+1, err, mustJSON(res))
				}
			}
			events := h.sink.all()
			if n := len(names) * len(shapes); len(events) != n+2 {
				t.Fatalf("%d audit records, want %d", len(events), n+2)
			}
			norm := func(e audit.Event) audit.Event {
				e.Time, e.CorrelationID, e.LatencyMS, e.Tool, e.ArgsSHA256 = time.Time{}, "", 0, "", ""
				// A name no tool could have is in the detail
				// (recordedTool), hidden or not.
				if strings.HasPrefix(e.Detail, "tool name ") {
					e.Detail = ""
				}
				// The trail, the operator's, tells a hidden tool from a
				// missing name (what the caller was told does not).
				if e.Detail == "hidden from the caller: it lacks a role the tool requires" {
					e.Detail = ""
				}
				return e
			}
			first := norm(events[0])
			for _, e := range events[:len(events)-2] {
				if diff := cmp.Diff(first, norm(e)); diff != "" {
					t.Errorf("the record of %q differs from that of %q (-first +this):\n%s", e.Tool, events[0].Tool, diff)
				}
			}
		})
	}
}

// TestReview14RolesShrinkMidSession: a session that listed its tools as
// alice goes on as bob (a refreshed token with fewer roles), without
// listing again. The tools alice saw are no longer callable, and a change
// to a tool only alice may see is not told to the session: its caller is
// bob now.
func TestReview14RolesShrinkMidSession(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil }
	cfg := basePolicy(false)
	cfg.Tools = append(cfg.Tools, policy.ToolRule{Name: "admin_export", Class: policy.Read}, policy.ToolRule{Name: "lookup", Class: policy.Read})
	w := newNoteWatch()
	h := newServerHarness(t, cfg, nil, func(s *mcp.Server) { s.AddSendingMiddleware(w.middleware(w.delivered, false)) })
	h.srv.AddSendingMiddleware(w.middleware(w.attempted, true))
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := h.srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	setID := func(id *mcpguard.Identity) {
		h.auth.mu.Lock()
		h.auth.ids[ss] = id
		h.auth.mu.Unlock()
	}
	setID(alice)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if res, err := call(t, cs, "admin_stats", map[string]any{}); err != nil || res.IsError {
		t.Fatalf("alice's call: %v %s", err, mustJSON(res))
	}
	setID(bob)
	_, err = call(t, cs, "admin_stats", map[string]any{})
	if we := wireError(err); we == nil || we.Message != `unknown tool "admin_stats"` {
		t.Fatalf("after the roles shrank, admin_stats answered %v, want the unknown-tool error", err)
	}
	h.srv.AddTool(&mcp.Tool{Name: "admin_export", InputSchema: obj}, ok)
	w.waitAttempts(t, 1)
	if _, d := w.count(ss); d != 0 {
		t.Errorf("the session, now bob's, was told of a change to admin_export, which only alice may see")
	}
	// Its credentials revoked, the session is told of no change at all,
	// not even one bob could see.
	setID(nil)
	if res, err := call(t, cs, "echo", map[string]any{"text": "x"}); err != nil || errorCode(t, res) != string(mcpguard.CodeUnauthenticated) {
		t.Fatalf("call without an identity: %v %s, want UNAUTHENTICATED", err, mustJSON(res))
	}
	h.srv.AddTool(&mcp.Tool{Name: "lookup", InputSchema: obj}, ok)
	w.waitAttempts(t, 2)
	if _, d := w.count(ss); d != 0 {
		t.Errorf("a session whose caller the guard can no longer authenticate was told of a change")
	}
}

// TestReview14ConcurrentHiddenChurn adds and removes hidden tools while
// bob and alice list and call: bob never sees one listed, calling one is
// always the unknown-tool error, and bob's session is told of no change.
// Run with -race.
func TestReview14ConcurrentHiddenChurn(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil }
	cfg := basePolicy(false)
	cfg.Default = &policy.ToolRule{Class: policy.Read} // any admin_* name has a rule: hidden from bob by the role rule
	w := newNoteWatch()
	h := newServerHarness(t, cfg, nil, func(s *mcp.Server) { s.AddSendingMiddleware(w.middleware(w.delivered, false)) })
	h.srv.AddSendingMiddleware(w.middleware(w.attempted, true))
	ctx := context.Background()
	connect := func(id *mcpguard.Identity) (*mcp.ClientSession, *mcp.ServerSession) {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := h.srv.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		h.auth.mu.Lock()
		h.auth.ids[ss] = id
		h.auth.mu.Unlock()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close(); ss.Close() })
		return cs, ss
	}
	bobCS, bobSS := connect(bob)
	aliceCS, _ := connect(alice)
	if _, err := bobCS.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 60 {
			name := fmt.Sprintf("admin_x%d", i%3)
			if i%2 == 0 {
				h.srv.AddTool(&mcp.Tool{Name: name, InputSchema: obj}, ok)
			} else {
				h.srv.RemoveTools(name)
			}
			time.Sleep(time.Millisecond)
		}
	})
	wg.Go(func() {
		for range 40 {
			res, err := bobCS.ListTools(ctx, nil)
			if err != nil {
				t.Error(err)
				return
			}
			for _, tl := range res.Tools {
				if strings.HasPrefix(tl.Name, "admin_") {
					t.Errorf("bob was listed %q", tl.Name)
				}
			}
			_, err = call(t, bobCS, "admin_x0", map[string]any{})
			if we := wireError(err); we == nil || we.Code != -32602 || we.Message != `unknown tool "admin_x0"` {
				t.Errorf("bob's call of admin_x0: %v, want the unknown-tool error", err)
			}
		}
	})
	wg.Go(func() {
		for range 40 {
			if _, err := aliceCS.ListTools(ctx, nil); err != nil {
				t.Error(err)
				return
			}
			_, _ = call(t, aliceCS, "admin_x1", map[string]any{})
		}
	})
	wg.Wait()
	w.mu.Lock()
	before := 0
	for _, c := range w.attempted {
		before += c
	}
	w.mu.Unlock()
	h.srv.AddTool(&mcp.Tool{Name: "admin_last", InputSchema: obj}, ok)
	w.waitAttempts(t, before+2)
	if _, d := w.count(bobSS); d != 0 {
		t.Errorf("bob's session was sent %d tools/list_changed notifications for changes to tools he may not see", d)
	}
}

// TestReview14RemovedToolIsNotFound: a tool removed from the server while
// no session was connected stays in the guard's registry until the guard
// next lists the tools (a second at most). A call in that window reaches
// the go-sdk, which has no such tool: the answer must be the guard's
// TOOL_NOT_FOUND (with Options.NotFoundCode, as for any unknown name),
// recorded as such, and the call charged nothing. A write's intent record,
// made before the go-sdk was asked, is followed by that outcome. The next
// call of the name re-lists the tools and is refused before any step.
func TestReview14RemovedToolIsNotFound(t *testing.T) {
	for _, tc := range []struct {
		name string
		args map[string]any
		want []string
	}{
		{"echo", map[string]any{"text": "x"}, []string{
			"echo outcome TOOL_NOT_FOUND cost=0 the tool was removed from the server",
			"no_such_tool outcome TOOL_NOT_FOUND cost=0 ",
			"echo outcome TOOL_NOT_FOUND cost=0 ",
		}},
		{"add_note", map[string]any{"title": "x"}, []string{
			"add_note intent  cost=0 ",
			"add_note outcome TOOL_NOT_FOUND cost=0 the tool was removed from the server",
			"no_such_tool outcome TOOL_NOT_FOUND cost=0 ",
			"add_note outcome TOOL_NOT_FOUND cost=0 ",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 2, Window: time.Hour}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, basePolicy(false), &mcpguard.Options{NotFoundCode: -32010, Limiter: lim})
			h.srv.RemoveTools(tc.name) // no session: nobody is notified, the registry keeps it
			cs := h.connect(bob, clientOpts{})
			_, err = call(t, cs, tc.name, tc.args)
			_, errUnknown := call(t, cs, "no_such_tool", map[string]any{})
			_, errAgain := call(t, cs, tc.name, tc.args)
			we, wu, wa := wireError(err), wireError(errUnknown), wireError(errAgain)
			if we == nil || wu == nil || wa == nil || we.Code != -32010 || wu.Code != -32010 || wa.Code != -32010 ||
				we.Message != `unknown tool "`+tc.name+`"` || wa.Message != we.Message {
				t.Errorf("call of the removed tool: %v; an unknown name: %v; the removed tool again: %v; want -32010 unknown-tool errors", err, errUnknown, errAgain)
			}
			var got []string
			for _, e := range h.sink.all() {
				got = append(got, fmt.Sprintf("%s %s %s cost=%g %s", e.Tool, e.Phase, e.Code, e.Cost, e.Detail))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("audit records (-want +got):\n%s", diff)
			}
			// Nothing was charged: bob's two calls an hour are whole.
			for i := range 2 {
				if res, err := call(t, cs, "whoami", map[string]any{}); err != nil || res.IsError {
					t.Fatalf("call %d after the removed tool: %v %s", i+1, err, mustJSON(res))
				}
			}
		})
	}
}

// TestReview14ForgedCursorsLookAlike: the guard lists in one page and gives
// no cursor; a cursor crafted to name a hidden tool (the go-sdk's cursors
// are base64 gob of the last name of a page), one naming no tool, one
// naming a visible tool and one that is not a cursor at all all answer the
// same empty page, whatever the server's page size.
func TestReview14ForgedCursorsLookAlike(t *testing.T) {
	cursor := func(t *testing.T, last string) string {
		t.Helper()
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(struct{ LastUID string }{last}); err != nil {
			t.Fatal(err)
		}
		return base64.URLEncoding.EncodeToString(buf.Bytes())
	}
	for _, pageSize := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("page_size_%d", pageSize), func(t *testing.T) {
			h := newServerHarness(t, basePolicy(false), &mcp.ServerOptions{PageSize: pageSize}, nil)
			r := h.rawConnect(bob)
			full := r.response("tools/list", `{}`)
			if strings.Contains(full, "admin_stats") || strings.Contains(full, "nextCursor") {
				t.Errorf("bob's listing %s names admin_stats or has a cursor", full)
			}
			want := ""
			for _, c := range []string{cursor(t, "admin_stats"), cursor(t, "admin_zzz"), cursor(t, "echo"), cursor(t, ""), "not a cursor"} {
				q, _ := json.Marshal(c)
				got := r.response("tools/list", `{"cursor":`+string(q)+`}`)
				if want == "" {
					want = got
					if !strings.Contains(got, `"tools":[]`) {
						t.Errorf("a forged cursor listed %s, want no tools", got)
					}
				}
				// Each response has its own id: compare without it.
				if strip := func(s string) string { return s[strings.Index(s, `"result"`):] }; strip(got) != strip(want) {
					t.Errorf("cursor %q: %s, want %s", c, got, want)
				}
			}
		})
	}
}

// TestReview14HiddenCallOverHTTPLooksUnknown: over Streamable HTTP, a call
// of a hidden tool gets the status, headers and body that a server without
// the tool sends, on both protocol generations.
func TestReview14HiddenCallOverHTTPLooksUnknown(t *testing.T) {
	guarded, _ := confirmHTTPServer(t, true)
	bareSrv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	bareSrv.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, reviewOK)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return bareSrv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)
	const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`
	post := func(url, version, body string) string {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer bob-token")
		req.Header.Set("Mcp-Protocol-Version", version)
		if version >= "2026-07-28" {
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", "admin_stats")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	for _, tc := range []struct{ version, body string }{
		{"2025-11-25", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"admin_stats","arguments":{}}}`},
		{"2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"admin_stats","arguments":{},` + modernMeta + `}}`},
	} {
		got, want := post(guarded, tc.version, tc.body), post(hs.URL, tc.version, tc.body)
		if got != want {
			t.Errorf("%s: a hidden tool over HTTP:\n got %s\nwant %s", tc.version, got, want)
		}
		if !strings.Contains(want, `unknown tool \"admin_stats\"`) {
			t.Errorf("%s: the bare server's answer %s is not the unknown-tool error: the probe is wrong", tc.version, want)
		}
	}
}
