package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview43ResourceUpdatedNotPassedWhileToolsListFails: the guard lists
// the server's tools to know whether a resources/updated notification names
// a UI resource its session's caller may not see; while that listing fails
// the notification is dropped, whatever resource it names (a plain one
// here, which every caller may see), and once the listing works again the
// next one is passed on. bob subscribed to both resources; the ping after
// each round is answered after whatever the server sent before it.
func TestReview43ResourceUpdatedNotPassedWhileToolsListFails(t *testing.T) {
	var failing atomic.Bool
	srv := review26Server(true, nil)
	review43FailingToolsList(srv, &failing, nil)
	h := review26Guard(t, srv)
	r := review26Connect(t, h, bob, true)
	for _, uri := range []string{plainURI, uiOpen} {
		if _, werr := r.call("resources/subscribe", `{"uri":`+review26Q(uri)+`}`); werr != nil {
			t.Fatalf("bob's subscription to %s: %v", uri, werr)
		}
	}
	// The server writes a notification to the in-memory pipe only as the
	// client reads it: from here on a goroutine reads, in order.
	msgs := make(chan jsonrpc.Message, 16)
	go func() {
		defer close(msgs)
		for {
			m, err := r.conn.Read(context.Background())
			if err != nil {
				return
			}
			msgs <- m
		}
	}()
	var pings int64
	updated := func() int {
		t.Helper()
		pings++
		id, _ := jsonrpc.MakeID(fmt.Sprintf("review43-ping-%d", pings))
		r.send(&jsonrpc.Request{ID: id, Method: "ping", Params: json.RawMessage(`{}`)})
		n := 0
		timeout := time.After(10 * time.Second)
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					t.Fatal("the session ended")
				}
				if resp, ok := m.(*jsonrpc.Response); ok && resp.ID == id {
					return n
				}
				if req, ok := m.(*jsonrpc.Request); ok && req.Method == "notifications/resources/updated" {
					n++
				}
			case <-timeout:
				t.Fatal("no answer to a ping in 10 s")
			}
		}
	}
	for _, down := range []bool{true, false, true, false} {
		failing.Store(down)
		for _, uri := range []string{plainURI, uiOpen} {
			if err := srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
				t.Fatal(err)
			}
		}
		want := 2
		if down {
			want = 0
		}
		if got := updated(); got != want {
			t.Errorf("tools/list failing %v: bob heard %d resources/updated notifications, want %d", down, got, want)
		}
	}
}

// review43FailingToolsList makes tools/list fail on srv, with the error
// "tools/list is down", while failing is set; seen, if not nil, is handed
// the method of every other request. Call it before a guard is installed
// on srv: below the guard, it fails the guard's own listings too.
func review43FailingToolsList(srv *mcp.Server, failing *atomic.Bool, seen func(method string)) {
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" && failing.Load() {
				return nil, errors.New("review43: tools/list is down")
			}
			if seen != nil {
				seen(method)
			}
			return next(ctx, method, req)
		}
	})
}
