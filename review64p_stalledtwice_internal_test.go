package mcpguard

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview64pStalledTwiceFailsFast: Wait's doc (670bae4) says that once
// a notification to a client that stopped reading has been waited for
// notifyWait, "that session's later notifications fail at once until it
// [the write] ends". With two such writes pending on one session (two
// calls of the session, each sending progress, while its client reads
// nothing), the first to end clears the session's mark although the other
// is still pending: the session's next notification is written again and
// its sender held the whole notifyWait, not failed at once.
func TestReview64pStalledTwiceFailsFast(t *testing.T) {
	defer func(d time.Duration) { notifyWait = d }(notifyWait)
	notifyWait = 50 * time.Millisecond

	g := annGuard(t, "t")
	ss := new(mcp.ServerSession) // the session's identity only
	req := &mcp.ProgressNotificationServerRequest{Session: ss, Params: &mcp.ProgressNotificationParams{}}

	// A write that ends when its channel is closed (the client reads it).
	writing := func(release <-chan struct{}, called *atomic.Int32) mcp.MethodHandler {
		return func(context.Context, string, mcp.Request) (mcp.Result, error) {
			called.Add(1)
			<-release
			return nil, nil
		}
	}
	relA, relB, relC := make(chan struct{}), make(chan struct{}), make(chan struct{})
	defer close(relB)
	defer close(relC)
	var calledA, calledB, calledC atomic.Int32
	errs := make(chan error, 2)
	go func() {
		_, err := g.notifyBounded(context.Background(), "notifications/progress", req, writing(relA, &calledA))
		errs <- err
	}()
	go func() {
		_, err := g.notifyBounded(context.Background(), "notifications/progress", req, writing(relB, &calledB))
		errs <- err
	}()
	for range 2 {
		if err := <-errs; err != errNotReading {
			t.Fatalf("a stalled notification: %v, want errNotReading", err)
		}
	}
	if calledA.Load() != 1 || calledB.Load() != 1 {
		t.Skip("the two notifications were not both written concurrently")
	}
	// The first write ends; the second is still pending.
	close(relA)
	time.Sleep(100 * time.Millisecond)

	start := time.Now()
	_, err := g.notifyBounded(context.Background(), "notifications/progress", req, writing(relC, &calledC))
	if err != errEarlierPending || calledC.Load() != 0 {
		t.Errorf("the session's next notification, a write still pending: err %v, written %d times, "+
			"after %v; want errEarlierPending at once, not written (doc: later notifications fail at once "+
			"until the write ends)", err, calledC.Load(), time.Since(start).Round(time.Millisecond))
	}
}
