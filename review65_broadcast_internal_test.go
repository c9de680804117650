package mcpguard

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview65BroadcastAfterItsContextEnded: go-sdk v1.8.0 sends a
// resources/updated or list_changed to every session in turn under one
// ten-second context (notifySessions). Over Streamable HTTP a client that
// stopped reading, early in the list, uses the ten seconds up, and the
// write to each later session goes out all the same, whatever the context
// says; since 4b3ec05 the guard wrote nothing for a notification whose
// context had ended, so no session after the stalled one was told. Only a
// guarded call's notification (its call ended) is dropped so now.
func TestReview65BroadcastAfterItsContextEnded(t *testing.T) {
	g := annGuard(t, "a")
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	var written atomic.Int64
	next := func(context.Context, string, mcp.Request) (mcp.Result, error) {
		written.Add(1)
		return nil, nil
	}
	send := g.sending(next, next)
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	_, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	req := &mcp.ServerRequest[*mcp.ResourceUpdatedNotificationParams]{Session: ss, Params: &mcp.ResourceUpdatedNotificationParams{URI: "file:///a"}}
	// Its sender may be told the context ended; the write goes out.
	send(ended, "notifications/resources/updated", req)
	for deadline := time.Now().Add(2 * time.Second); written.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := written.Load(); n != 1 {
		t.Errorf("a broadcast whose context ended: written %d times; want it written", n)
	}
	written.Store(0)
	inCall := context.WithValue(ended, callKey{}, &call{})
	if _, err := send(inCall, "notifications/progress", req); err == nil {
		t.Error("a guarded call's notification whose context ended: no error")
	}
	time.Sleep(50 * time.Millisecond)
	if n := written.Load(); n != 0 {
		t.Errorf("a guarded call's notification whose context ended: written %d times; want none", n)
	}
}
