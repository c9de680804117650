package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ctxUIServer is a uiServer whose UnsubscribeHandler does its work with
// its context, as one that keeps subscriptions in a database does: it
// fails, and the go-sdk keeps the subscription, when that context ended.
func ctxUIServer(withAdmin bool) *uiServer {
	u := &uiServer{have: map[string]bool{plainURI: true, uiOpen: true}}
	u.srv = mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
			u.mu.Lock()
			defer u.mu.Unlock()
			u.subscribe = append(u.subscribe, req.Params.URI)
			if !u.have[req.Params.URI] {
				return mcp.ResourceNotFoundError(req.Params.URI)
			}
			return nil
		},
		UnsubscribeHandler: func(ctx context.Context, _ *mcp.UnsubscribeRequest) error { return ctx.Err() },
	})
	addTools(u.srv, &spy{})
	u.srv.AddTool(uiTool("open_app", nested(uiOpen)), okTool)
	for _, uri := range []string{plainURI, uiOpen} {
		u.srv.AddResource(&mcp.Resource{URI: uri, Name: uri}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
		})
	}
	if withAdmin {
		u.srv.AddTool(uiTool("admin_app", nested(uiAdmin)), okTool)
		u.have[uiAdmin] = true
		u.srv.AddResource(&mcp.Resource{URI: uiAdmin, Name: uiAdmin}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "admin"}}}, nil
		})
	}
	return u
}

// TestReview23cRefusedListenLeavesNoSubscription: a subscriptions/listen
// of a resource the caller may see and then of a hidden UI resource is
// refused, as the server without that resource refuses it, and leaves the
// session subscribed to nothing. The go-sdk undoes the subscriptions of a
// refused listen with the listen's context; the guard's run of the URIs
// before the hidden one (since replaced, see asAbsent) ended that context first, so an
// UnsubscribeHandler that honours its context failed, the go-sdk kept the
// subscription, and later updates of the visible resource reached the
// session: after [visible, hidden] but not after [visible, absent].
func TestReview23cRefusedListenLeavesNoSubscription(t *testing.T) {
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(v, func(t *testing.T) {
			u := ctxUIServer(true)
			h := u.guard(t)
			b := ctxUIServer(false)
			meta := ""
			var guarded, bare *rawSession
			if v == "2026-07-28" {
				meta = "," + r23bMeta
				guarded = modernConnect(t, u.srv, func(ss *mcp.ServerSession) {
					h.auth.mu.Lock()
					h.auth.ids[ss] = bob
					h.auth.mu.Unlock()
				})
				bare = modernConnect(t, b.srv, nil)
			} else {
				guarded, bare = h.rawConnect(bob), rawConnectTo(t, b.srv, nil)
			}
			for _, first := range []string{plainURI, uiOpen} {
				q, _ := json.Marshal([]string{first, uiAdmin})
				params := `{"notifications":{"resourceSubscriptions":` + string(q) + `}` + meta + `}`
				got, want := guarded.response("subscriptions/listen", params), bare.response("subscriptions/listen", params)
				if got != want {
					t.Errorf("bob's subscriptions/listen %s:\n got %s\nwant %s", params, got, want)
				}
				for _, s := range []*mcp.Server{u.srv, b.srv} {
					if err := s.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: first}); err != nil {
						t.Fatal(err)
					}
				}
				g, w := guarded.heardWithin("notifications/resources/updated", 300*time.Millisecond),
					bare.heardWithin("notifications/resources/updated", 300*time.Millisecond)
				if g != w {
					t.Errorf("after the listen %s, an update of %s reached bob: %v, on the bare server: %v", q, first, g, w)
				}
			}
		})
	}
}
