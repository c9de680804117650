package main

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview58StopEndsListens: a go-sdk client on protocol 2026-07-28 that
// handles list changes holds a subscriptions/listen request open, which the
// go-sdk ends only when the request's context ends. A stop of the HTTP
// server waited its whole 15 s for it and then failed (serveHTTP returned
// Shutdown's error: the shop exited 1). The listens end at the stop now.
func TestReview58StopEndsListens(t *testing.T) {
	st := newStack(t, nil, nil)
	cs := connect(t, st, sessionCustomer, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
	})
	ok(t, cs, "list_categories", map[string]any{})
	time.Sleep(200 * time.Millisecond) // the client's listen reaches the server
	start := time.Now()
	st.stop()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the stop took %v with a client listening", d)
	}
}
