package mcpguard_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview44bEndedListenForgotten: on protocol 2026-07-28, once a
// subscriptions/listen of a session returns (here one for a resource
// subscription the server does not take, which go-sdk v1.8.0 acknowledges
// with nothing and ends at once), go-sdk v1.8.0 has ended the session's
// subscriptions, its listen for tools/list_changed included; so has the
// guard: a new policy that changes the session's tools sends it no
// tools/list_changed on its old listen. A session connected after it,
// still listening, is told, which bounds the check.
func TestReview44bEndedListenForgotten(t *testing.T) {
	pu, pa := lcPolicy(t, "user"), lcPolicy(t, "admin")
	r := newLCRig(t, "", pu, lcSpecTools)
	user := r.connect(bob, lcListTools)
	// The client's Subscribe sends the listen and returns at once, without
	// waiting for the server's answer (go-sdk v1.8.0): wait for the
	// server's handling of it, the guard's included, to return. (A
	// middleware added now is the outermost, and passes by the session's
	// first listen, open since before.)
	ended := make(chan struct{})
	end := sync.OnceFunc(func() { close(ended) })
	r.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "subscriptions/listen" && req.GetSession() == user.ss {
				end()
			}
			return res, err
		}
	})
	if err := user.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "file:///plain.txt"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not end the subscription's listen")
	}
	sentinel := r.connect(bob, lcListTools)
	r.setPolicy(pa)
	r.waitTools(sentinel, 1)
	if n := r.w.toolsCount(user.ss); n != 0 {
		t.Errorf("the session whose listens ended was sent %d tools/list_changed, want 0", n)
	}
}

// TestReview44bOpenListenKeepsListens: on protocol 2026-07-28, a second
// subscriptions/listen of a session (a resource subscription, which the
// guard lists the tools and resources for) that stays open ends no listen
// of the session's: its first listen, for tools/list_changed, is still
// told of a new policy that changes its tools.
func TestReview44bOpenListenKeepsListens(t *testing.T) {
	pu, pa := lcPolicy(t, "user"), lcPolicy(t, "admin")
	r := &lcRig{t: t, auth: &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}}
	r.w = newLCWatch()
	var mu sync.Mutex
	acks := map[*mcp.ServerSession]int{}
	subscribed := func(context.Context, *mcp.SubscribeRequest) error { return nil }
	unsubscribed := func(context.Context, *mcp.UnsubscribeRequest) error { return nil }
	r.srv = mcp.NewServer(&mcp.Implementation{Name: "lc", Version: "1"},
		&mcp.ServerOptions{SubscribeHandler: subscribed, UnsubscribeHandler: unsubscribed})
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil }
	for _, name := range []string{"echo", "report", "ops"} {
		r.srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, ok)
	}
	r.srv.AddResource(&rnPlainResource, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
	})
	r.srv.AddSendingMiddleware(r.w.middleware)
	r.srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				mu.Lock()
				acks[req.GetSession().(*mcp.ServerSession)]++
				mu.Unlock()
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
	user := r.connect(bob, lcListTools)
	go user.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: rnPlainResource.URI}) // open until Close
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return acks[user.ss] >= 2
	})
	r.setPolicy(pa)
	r.waitTools(user, 1)
}
