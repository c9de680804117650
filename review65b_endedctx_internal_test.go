package mcpguard

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview65bEndedCallSparesSession: notifyBounded's doc (and Wait's)
// says a session's later notifications fail at once only while a write
// waited for notifyWait (past the wait) is still pending. A notification
// whose call's context ended while it was written (the call cancelled, or
// finished while a goroutine of its handler still reported) left its
// sender at once, and its write, under way a moment, marked its session
// stalled as if it had been waited for: a notification of another call of the
// session, sent while that write ran, failed at once (errEarlierPending)
// and was never sent.
func TestReview65bEndedCallSparesSession(t *testing.T) {
	g := annGuard(t, "t")
	ss := new(mcp.ServerSession) // the session's identity only
	req := &mcp.ProgressNotificationServerRequest{Session: ss, Params: &mcp.ProgressNotificationParams{}}

	// A call's notification, whose context ends while its write is under
	// way (until written is closed): its sender leaves.
	ctx, cancel := context.WithCancel(context.Background())
	written, entered := make(chan struct{}), make(chan struct{})
	defer close(written)
	errc := make(chan error, 1)
	go func() {
		_, err := g.notifyBounded(ctx, "notifications/progress", req, func(context.Context, string, mcp.Request) (mcp.Result, error) {
			close(entered)
			<-written
			return nil, nil
		})
		errc <- err
	}()
	<-entered
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Fatalf("the ended call's notification: %v, want context.Canceled", err)
	}

	// Another call's notification, while that write runs.
	var sent atomic.Bool
	_, err := g.notifyBounded(context.Background(), "notifications/progress", req, func(context.Context, string, mcp.Request) (mcp.Result, error) {
		sent.Store(true)
		return nil, nil
	})
	if err != nil || !sent.Load() {
		t.Errorf("another call's notification while an ended call's write, under way for no time, runs: "+
			"err %v, sent %v; want sent (only a write pending past notifyWait fails the next at once)", err, sent.Load())
	}
}
