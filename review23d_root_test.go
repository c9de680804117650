package mcpguard_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r23dSends records what a sending middleware saw: "method: error".
type r23dSends struct {
	mu   sync.Mutex
	seen []string
}

func (s *r23dSends) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		s.mu.Lock()
		s.seen = append(s.seen, fmt.Sprintf("%s: %v", method, err))
		s.mu.Unlock()
		return res, err
	}
}

func (s *r23dSends) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// r23dServer is a server with a visible resource and, withAdmin, a tool
// bob may not see and its UI resource. Its SubscribeHandler and
// UnsubscribeHandler tell the client, on their context, of what they took
// (a log message and a progress notification): what the go-sdk sends in
// the listen's stream; the SubscribeHandler also tells of updates of the
// other resources, which reach the session when the listen took them. Sending middleware records what it saw, added
// before (inner) and after (outer) the guard's when guarded.
func r23dServer(t *testing.T, withAdmin, guarded bool) (srv *mcp.Server, inner, outer *r23dSends) {
	t.Helper()
	have := map[string]bool{plainURI: true, uiOpen: true}
	tell := func(ctx context.Context, ss *mcp.ServerSession, meta mcp.Meta, what string) {
		//lint:ignore SA1019 a notification the go-sdk sends in the listen's stream, deprecated or not
		_ = ss.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: what})
		if tok, ok := meta["progressToken"]; ok {
			_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Message: what})
		}
	}
	srv = mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
			if !have[req.Params.URI] {
				return mcp.ResourceNotFoundError(req.Params.URI)
			}
			tell(ctx, req.Session, req.Params.Meta, "subscribed "+req.Params.URI)
			// Updates of the other resources, which reach this session
			// if this listen subscribed it to them before.
			for _, uri := range []string{plainURI, uiOpen} {
				if uri != req.Params.URI {
					_ = srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
				}
			}
			return nil
		},
		UnsubscribeHandler: func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
			tell(ctx, req.Session, req.Params.Meta, "unsubscribed "+req.Params.URI)
			return ctx.Err()
		},
	})
	addTools(srv, &spy{})
	srv.AddTool(uiTool("open_app", nested(uiOpen)), okTool)
	uris := []string{plainURI, uiOpen}
	if withAdmin {
		srv.AddTool(uiTool("admin_app", nested(uiAdmin)), okTool)
		have[uiAdmin] = true
		uris = append(uris, uiAdmin)
	}
	for _, uri := range uris {
		srv.AddResource(&mcp.Resource{URI: uri, Name: uri}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
		})
	}
	inner, outer = &r23dSends{}, &r23dSends{}
	srv.AddSendingMiddleware(inner.middleware)
	if guarded {
		pol, err := policy.New(uiPolicy())
		if err != nil {
			t.Fatal(err)
		}
		authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return bob, nil })
		g, err := mcpguard.New(pol, authn, &mcpguard.Options{Audit: &memSink{}, Confirmer: testSigner(t, nil), Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Install(srv); err != nil {
			t.Fatal(err)
		}
	}
	srv.AddSendingMiddleware(outer.middleware)
	return srv, inner, outer
}

// r23dListens are the listens whose answers are compared: each names the
// hidden UI resource (absent from the bare server), after URIs the server
// has, or first.
var r23dListens = []string{
	`{"resourceSubscriptions":["` + plainURI + `","` + uiAdmin + `"]}`,
	`{"resourceSubscriptions":["` + plainURI + `","` + uiOpen + `","` + uiAdmin + `"],"toolsListChanged":true,"resourcesListChanged":true}`,
	`{"resourceSubscriptions":["` + uiOpen + `","` + plainURI + `","` + uiAdmin + `"]}`,
	`{"resourceSubscriptions":["` + uiAdmin + `"],"promptsListChanged":true}`,
}

// TestReview23dRefusedListenOverStatelessHTTP: over stateless Streamable
// HTTP, a subscriptions/listen refused at a hidden UI resource is answered
// with the status, headers and body (the notifications that the
// SubscribeHandler and UnsubscribeHandler send on their context, in the
// listen's stream, too) that the server without that resource sends.
func TestReview23dRefusedListenOverStatelessHTTP(t *testing.T) {
	serve := func(withAdmin bool) string {
		srv, _, _ := r23dServer(t, withAdmin, withAdmin)
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
		t.Cleanup(hs.Close)
		return hs.URL
	}
	guarded, bare := serve(true), serve(false)
	post := func(url, version, body string) string {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", version)
		if version >= "2026-07-28" {
			req.Header.Set("Mcp-Method", "subscriptions/listen")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var hdr []string
		for k, v := range resp.Header {
			if k != "Date" {
				hdr = append(hdr, k+": "+strings.Join(v, ", "))
			}
		}
		sort.Strings(hdr)
		return fmt.Sprintf("%d\n%s\n\n%s", resp.StatusCode, strings.Join(hdr, "\n"), b)
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		meta := `"_meta":{"progressToken":"p1"}`
		if version == "2026-07-28" {
			meta = strings.Replace(r23bMeta, `{`, `{"progressToken":"p1","io.modelcontextprotocol/logLevel":"debug",`, 1)
		}
		for _, notes := range r23dListens {
			body := `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":` + notes + `,` + meta + `}}`
			got, want := post(guarded, version, body), post(bare, version, body)
			if got != want {
				t.Errorf("%s: subscriptions/listen %s over stateless HTTP:\n got %s\nwant %s", version, notes, got, want)
			}
			if !strings.Contains(want, "not found") {
				t.Errorf("%s: the bare server's answer %s is not a refusal: the probe is wrong", version, want)
			}
			t.Logf("%s %s:\n%s", version, notes, want)
		}
	}
}

// heardUntil sends a request and returns every message the server sent
// until its answer, the answer last, encoded as sent; ids are the
// client's own, the same on both servers.
func (r *rawSession) heardUntil(method, params string) []string {
	r.t.Helper()
	id := r.start(method, params)
	var out []string
	for {
		m := r.read()
		b, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			r.t.Fatal(err)
		}
		out = append(out, string(b))
		if resp, ok := m.(*jsonrpc.Response); ok && resp.ID == id {
			return out
		}
	}
}

// TestReview23dRefusedListenTellsTheClientNothing: on an in-memory
// session, with logging at debug, a listen refused at a hidden UI resource
// sends the client the same messages, in the same order, as the server
// without that resource sends (the log and progress notifications its
// handlers send on their context, and the answer; no failed
// acknowledgement is told), and a sending middleware added before the
// guard sees what the bare server's sees.
func TestReview23dRefusedListenTellsTheClientNothing(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			for _, notes := range r23dListens {
				gsrv, ginner, _ := r23dServer(t, true, true)
				bsrv, binner, _ := r23dServer(t, false, false)
				var guarded, bare *rawSession
				meta := `"_meta":{"progressToken":"p1"}`
				if version == "2026-07-28" {
					meta = strings.Replace(r23bMeta, `{`, `{"progressToken":"p1","io.modelcontextprotocol/logLevel":"debug",`, 1)
					guarded, bare = modernConnect(t, gsrv, nil), modernConnect(t, bsrv, nil)
				} else {
					guarded, bare = rawConnectTo(t, gsrv, nil), rawConnectTo(t, bsrv, nil)
					for _, r := range []*rawSession{guarded, bare} {
						if _, err := r.call("logging/setLevel", `{"level":"debug"}`); err != nil {
							t.Fatal(err)
						}
					}
				}
				params := `{"notifications":` + notes + `,` + meta + `}`
				// The answer, then what came after it until a ping's.
				got := append(guarded.heardUntil("subscriptions/listen", params), guarded.heardUntil("ping", `{}`)...)
				want := append(bare.heardUntil("subscriptions/listen", params), bare.heardUntil("ping", `{}`)...)
				if !slices.Equal(got, want) {
					t.Errorf("listen %s: the client heard\n%s\nwant\n%s", notes, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				if g, w := ginner.get(), binner.get(); !slices.Equal(g, w) {
					t.Errorf("listen %s: a sending middleware added before Install saw %q, on the bare server %q", notes, g, w)
				}
			}
		})
	}
}

// TestReview23dOuterSendingMiddleware: a sending middleware added after
// Install sees, of a listen refused at a hidden UI resource, nothing the
// bare server's does not send (no acknowledgement: the guard passes the
// listen on with the hidden URI suffixed, which the server refuses).
func TestReview23dOuterSendingMiddleware(t *testing.T) {
	gsrv, _, gouter := r23dServer(t, true, true)
	bsrv, _, bouter := r23dServer(t, false, false)
	guarded, bare := rawConnectTo(t, gsrv, nil), rawConnectTo(t, bsrv, nil)
	var want []string // nothing
	for _, notes := range r23dListens {
		params := `{"notifications":` + notes + `}`
		if got, want := guarded.response("subscriptions/listen", params), bare.response("subscriptions/listen", params); got != want {
			t.Errorf("subscriptions/listen %s:\n got %s\nwant %s", notes, got, want)
		}
	}
	var got []string
	for _, s := range gouter.get() {
		if !strings.HasPrefix(s, "notifications/message") && !strings.HasPrefix(s, "notifications/resources/updated") {
			got = append(got, s)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("a sending middleware added after Install saw %q, want %q", got, want)
	}
	for _, s := range bouter.get() {
		if strings.HasPrefix(s, "notifications/subscriptions/acknowledged") {
			t.Errorf("on the bare server, a sending middleware saw %q", s)
		}
	}
}
